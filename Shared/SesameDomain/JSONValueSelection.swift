import SesameScope

extension JSONValue {
    /// Only the members `scope` names, nested as in the original (`ConfigScope`'s rules, which
    /// SesameKit applies too). Nil when this is not an object.
    public func selecting(_ scope: ConfigScope) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return .object(scope.select(from: members, members: \.objectMembers, object: JSONValue.object))
    }

    /// The members, when this is an object.
    var objectMembers: [String: JSONValue]? {
        if case .object(let members) = self { members } else { nil }
    }
}

import SesameJSON

extension JSONValue {
    /// Only the members `scope` names, nested as in the original (`ConfigScope`'s rules). Nil when
    /// this is not an object.
    public func selecting(_ scope: ConfigScope) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return .object(scope.selecting(from: members))
    }
}

import Foundation

extension JSONValue {
    /// Only the members at `paths` (dot-separated, such as `api_keys.stripe`), nested as in the
    /// original; paths that do not exist are simply absent. Nil when this is not an object.
    public func selecting(paths: [String]) -> JSONValue? {
        guard case .object = self else { return nil }
        var result = JSONValue.object([:])
        for path in paths {
            let components = path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard !components.contains(""), let value = value(at: components[...]) else { continue }
            result.insert(value, at: components[...])
        }
        return result
    }

    private func value(at path: ArraySlice<String>) -> JSONValue? {
        guard let first = path.first else { return self }
        guard case .object(let members) = self, let member = members[first] else { return nil }
        return member.value(at: path.dropFirst())
    }

    private mutating func insert(_ value: JSONValue, at path: ArraySlice<String>) {
        guard let first = path.first else { return }
        guard case .object(var members) = self else { return }
        if path.count == 1 {
            members[first] = value
        } else {
            var child = members[first] ?? .object([:])
            if case .object = child {} else { child = .object([:]) }
            child.insert(value, at: path.dropFirst())
            members[first] = child
        }
        self = .object(members)
    }
}

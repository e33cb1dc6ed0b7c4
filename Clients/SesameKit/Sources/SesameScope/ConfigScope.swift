import SesameJSON

/// A config scope: the dot paths (`api_keys.stripe`) an app asks for, read by the one set of rules
/// delivery (the `scope` query) and SesameKit (a saved or zero-knowledge config, cut on the device)
/// share, so a scope selects the same members wherever it is applied.
///
/// The rules: 1 to `maxPaths` paths, each trimmed of spaces and tabs, of 1 to `maxPathLength` characters,
/// made of non-empty names separated by dots. A path that names nothing in the config selects
/// nothing; paths that overlap are merged (`a` and `a.b` select all of `a`).
public struct ConfigScope: Sendable, Equatable {
    /// The most paths one scope may list.
    public static let maxPaths = 100
    /// The longest a path may be, in characters.
    public static let maxPathLength = 200

    /// A scope that breaks the rules, and which rule.
    public struct Invalid: Error, Equatable, CustomStringConvertible {
        public let description: String
    }

    /// The paths, each as its names, in the order given.
    public let paths: [[String]]

    /// The scope of `paths` as an app lists them (`["features", "api_keys.stripe"]`).
    public init(paths: [String]) throws(Invalid) {
        guard !paths.isEmpty, paths.count <= Self.maxPaths else {
            throw Invalid(description: "a scope lists 1 to \(Self.maxPaths) paths, not \(paths.count)")
        }
        var parsed: [[String]] = []
        for path in paths {
            let trimmed = path.trimmingSpaces
            guard !trimmed.isEmpty, trimmed.count <= Self.maxPathLength else {
                throw Invalid(description: "a path has 1 to \(Self.maxPathLength) characters")
            }
            let names = trimmed.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard !names.contains("") else { throw Invalid(description: "'\(trimmed)' has an empty name between its dots") }
            parsed.append(names)
        }
        self.paths = parsed
    }

    /// The scope of a `scope` query's value: paths separated by commas.
    public init(query: String) throws(Invalid) {
        try self.init(paths: query.split(separator: ",", omittingEmptySubsequences: false).map(String.init))
    }

    /// The scope as a `scope` query's value, normalised: `a,b.c`.
    public var query: String { paths.map { $0.joined(separator: ".") }.joined(separator: ",") }

    /// The members of `config` the paths name, nested as in `config`.
    public func selecting(from config: [String: JSONValue]) -> [String: JSONValue] {
        var selected: [String: JSONValue] = [:]
        for names in paths {
            guard let value = Self.value(at: names[...], in: config) else { continue }
            Self.insert(value, at: names[...], into: &selected)
        }
        return selected
    }

    private static func value(at names: ArraySlice<String>, in object: [String: JSONValue]) -> JSONValue? {
        guard let first = names.first, let member = object[first] else { return nil }
        if names.count == 1 { return member }
        guard let inner = member.objectValue else { return nil }
        return value(at: names.dropFirst(), in: inner)
    }

    private static func insert(_ value: JSONValue, at names: ArraySlice<String>, into object: inout [String: JSONValue]) {
        guard let first = names.first else { return }
        if names.count == 1 {
            object[first] = value
            return
        }
        // A member already selected whole (`a` before `a.b`) is an object holding `b` already:
        // inserting `b` again into it leaves it whole.
        var inner = object[first]?.objectValue ?? [:]
        insert(value, at: names.dropFirst(), into: &inner)
        object[first] = .object(inner)
    }
}

extension String {
    /// Without spaces or tabs at either end.
    fileprivate var trimmingSpaces: String {
        var text = Substring(self)
        while text.first == " " || text.first == "\t" { text = text.dropFirst() }
        while text.last == " " || text.last == "\t" { text = text.dropLast() }
        return String(text)
    }
}

import SesameJSON
import SesameScope
import Testing

/// The scope rules delivery and SesameKit share.
@Suite("Config scopes")
struct ConfigScopeTests {
    typealias Value = JSONValue

    let config: [String: Value] = [
        "api_keys": .object(["stripe": .string("sk"), "maps": .string("mk")]),
        "features": .object(["a": .string("on"), "b": .object(["c": .string("deep")])]),
        "plain": .string("p"),
    ]

    func select(_ paths: [String]) throws -> [String: Value] {
        try ConfigScope(paths: paths).selecting(from: config)
    }

    @Test("a path selects its member with the objects that lead to it; one naming nothing selects nothing")
    func selects() throws {
        #expect(try select(["api_keys.stripe"]) == ["api_keys": .object(["stripe": .string("sk")])])
        #expect(try select(["features.b.c", "plain"]) == ["features": .object(["b": .object(["c": .string("deep")])]), "plain": .string("p")])
        #expect(try select(["missing", "plain.below", "api_keys.none"]) == [:])
    }

    @Test("overlapping paths merge, in either order: the shorter selects all of its member")
    func overlapping() throws {
        let whole: [String: Value] = ["features": config["features"]!]
        #expect(try select(["features", "features.a"]) == whole)
        #expect(try select(["features.a", "features"]) == whole)
        #expect(try select(["features.a", "features.b.c"]) == ["features": .object(["a": .string("on"), "b": .object(["c": .string("deep")])])])
    }

    @Test("spaces and tabs around a path are trimmed; the query form is normalised")
    func trimming() throws {
        let scope = try ConfigScope(query: " api_keys.stripe ,\tplain")
        #expect(scope.paths == [["api_keys", "stripe"], ["plain"]])
        #expect(scope.query == "api_keys.stripe,plain")
    }

    @Test("refused: no path, an empty path or name, more than 100 paths, a path over 200 characters")
    func limits() throws {
        for invalid in [[], [""], [" "], ["a..b"], [".a"], ["a."], Array(repeating: "a", count: ConfigScope.maxPaths + 1),
            [String(repeating: "a", count: ConfigScope.maxPathLength + 1)]]
        {
            #expect(throws: ConfigScope.Invalid.self, "\(invalid.prefix(3))") { try ConfigScope(paths: invalid) }
        }
        #expect(throws: ConfigScope.Invalid.self) { try ConfigScope(query: "a,,b") }
        _ = try ConfigScope(paths: Array(repeating: "a", count: ConfigScope.maxPaths))
        _ = try ConfigScope(paths: [String(repeating: "a", count: ConfigScope.maxPathLength)])
    }
}

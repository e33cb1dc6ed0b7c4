import SesameHTTP
import Testing

@Suite("Route methods, for 405 answers")
struct RouteMethodsTests {
    static func admin() -> RouteMethods {
        let routes = RouteMethods()
        routes.add([
            (method: "POST", path: "/v1/admin/blob/upload"), (method: "PUT", path: "/v1/admin/blob/{key}"),
            (method: "GET", path: "/v1/admin/blob"), (method: "GET", path: "/v1/admin/config"), (method: "DELETE", path: "/v1/admin/config"),
        ])
        return routes
    }

    @Test("a path names the methods of its route, sorted")
    func methodsOfAPath() {
        #expect(Self.admin().methods(for: "/v1/admin/config") == ["DELETE", "GET"])
        #expect(Self.admin().methods(for: "/v1/admin/blob") == ["GET"])
    }

    @Test("a parameter matches any one segment; a literal segment wins over it, as in the router")
    func literalBeatsParameter() {
        #expect(Self.admin().methods(for: "/v1/admin/blob/model.bin") == ["PUT"])
        #expect(Self.admin().methods(for: "/v1/admin/blob/upload") == ["POST"])
    }

    @Test("an unknown path, or one with more segments, has none")
    func unknownPaths() {
        #expect(Self.admin().methods(for: "/v1/admin/nothing").isEmpty)
        #expect(Self.admin().methods(for: "/v1/admin/blob/a/b").isEmpty)
        #expect(Self.admin().methods(for: "/").isEmpty)
    }
}

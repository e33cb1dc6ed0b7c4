import AdminService
import AuthService
import DeliveryService
import Foundation
import SesameServer
import Testing

/// Each service's OpenAPI document and its router agree: a route added without its contract, or a
/// documented route that is gone, fails here. (`./sesame-dev test` also checks that each embedded
/// document is its `openapi.yaml`, and fuzzes the running suite against them with schemathesis.)
@Suite("OpenAPI documents and routers agree")
struct OpenAPIContractTests {
    /// `GET /v1/config`-style names of what a document describes.
    static func documented(_ json: String) throws -> Set<String> {
        let document = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(document["openapi"] as? String == "3.1.0")
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        let methods: Set<String> = ["get", "put", "post", "delete", "patch", "head", "options"]
        return Set(paths.flatMap { path, item in item.keys.filter(methods.contains).map { "\($0.uppercased()) \(path)" } })
    }

    static func registered(_ service: any SesameServiceDefinition.Type) throws -> Set<String> {
        let routes = try ServiceRuntime.routes(service, configuration: ServicePlumbingTests.configuration(databaseURL: "postgres://sesame@127.0.0.1:1/sesame"))
        return Set(routes.map { "\($0.method) \($0.path)" })
    }

    @Test("every registered route is documented, every documented route exists", arguments: ServicePlumbingTests.services)
    func documentsMatchRouters(service: any SesameServiceDefinition.Type) throws {
        let registered = try Self.registered(service)
        let documented = try Self.documented(service.openAPIDocument)
        #expect(registered.count > 5, "the router's routes could not be read")
        #expect(registered.subtracting(documented).sorted() == [], "registered but not in Services/\(service.name)/openapi.yaml")
        #expect(documented.subtracting(registered).sorted() == [], "in Services/\(service.name)/openapi.yaml but not registered")
    }

    @Test("the comparison sees a route missing from a document")
    func missingRouteIsSeen() throws {
        var document = try #require(try JSONSerialization.jsonObject(with: Data(DeliveryService.openAPIDocument.utf8)) as? [String: Any])
        var paths = try #require(document["paths"] as? [String: Any])
        paths["/v1/config"] = nil
        document["paths"] = paths
        let trimmed = String(decoding: try JSONSerialization.data(withJSONObject: document), as: UTF8.self)
        let missing = try Self.registered(DeliveryService.self).subtracting(try Self.documented(trimmed))
        #expect(missing == ["GET /v1/config"])
    }
}

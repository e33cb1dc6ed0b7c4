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

    /// The codes of a document's `Error` schema.
    static func documentedErrorCodes(_ json: String) throws -> Set<String> {
        let document = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let schemas = (document["components"] as? [String: Any])?["schemas"] as? [String: Any]
        let error = ((schemas?["Error"] as? [String: Any])?["properties"] as? [String: Any])?["error"] as? [String: Any]
        let code = (error?["properties"] as? [String: Any])?["code"] as? [String: Any]
        return Set(try #require(code?["enum"] as? [String], "no Error code enum"))
    }

    /// Every `code: "…"` written in the service's own sources.
    static func raisedErrorCodes(_ service: String) throws -> Set<String> {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Services/\(service)").standardizedFileURL
        let files = try #require(FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil)).compactMap { $0 as? URL }
            .filter { $0.pathExtension == "swift" }
        let pattern = try Regex(#"code: "([a-z_]+)""#)
        var codes: Set<String> = []
        for file in files {
            for match in try String(contentsOf: file, encoding: .utf8).matches(of: pattern) {
                if let code = match.output[1].substring { codes.insert(String(code)) }
            }
        }
        return codes
    }

    @Test("every error code a service's own code raises is one its document lists", arguments: ServicePlumbingTests.services)
    func errorCodesDocumented(service: any SesameServiceDefinition.Type) throws {
        let raised = try Self.raisedErrorCodes(service.name)
        #expect(raised.count > 3, "the service's error codes could not be read")
        #expect(raised.subtracting(try Self.documentedErrorCodes(service.openAPIDocument)).sorted() == [], "raised but not in Services/\(service.name)/openapi.yaml's Error codes")
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

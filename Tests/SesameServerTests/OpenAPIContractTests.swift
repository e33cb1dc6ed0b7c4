import AdminService
import AuthService
import DeliveryService
import Foundation
import SesameHTTP
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
        // A route's final `**` (the rest of the path) is documented as a final `{path}` parameter.
        return Set(routes.map { route in
            let path = route.path.hasSuffix("/**") ? route.path.dropLast(2) + "{path}" : Substring(route.path)
            return "\(route.method) \(path)"
        })
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

    /// The Swift sources under `folders` (relative to the repository), as one text.
    static func sources(_ folders: [String]) throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardizedFileURL
        var text = ""
        for folder in folders {
            let files = try #require(FileManager.default.enumerator(at: root.appendingPathComponent(folder), includingPropertiesForKeys: nil))
            for case let file as URL in files where file.pathExtension == "swift" { text += try String(contentsOf: file, encoding: .utf8) }
        }
        return text
    }

    @Test("a service's declared error codes are exactly its document's, both ways", arguments: ServicePlumbingTests.services)
    func errorCodesMatchDocument(service: any SesameServiceDefinition.Type) throws {
        let declared = service.errorCodes.flatMap { $0.codes }
        #expect(declared.count > 10, "the service's error codes could not be read")
        #expect(Set(declared).count == declared.count, "a code declared twice among \(service.errorCodes)")
        let documented = try Self.documentedErrorCodes(service.openAPIDocument)
        #expect(Set(declared).subtracting(documented).sorted() == [], "declared but not in Services/\(service.name)/openapi.yaml's Error codes")
        #expect(documented.subtracting(declared).sorted() == [], "in Services/\(service.name)/openapi.yaml's Error codes but in no set of \(service.name)'s")
    }

    @Test("every declared error code is raised somewhere: a code nothing answers is not in a set", arguments: ServicePlumbingTests.services)
    func declaredErrorCodesAreRaised(service: any SesameServiceDefinition.Type) throws {
        // A service's own set is used in its folder; the shared sets anywhere.
        let own = try Self.sources(["Services/\(service.name)"])
        let everywhere = try Self.sources(["Services", "Shared"])
        for codes in service.errorCodes {
            let typeName = String(describing: codes)
            let shared = codes == CommonErrorCode.self || codes == AccessTokenErrorCode.self
            for name in codes.caseNames {
                let use = "\(typeName).\(name)"
                #expect((shared ? everywhere : own).contains(use), "\(use) is declared but nothing raises it")
            }
        }
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

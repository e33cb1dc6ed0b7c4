import AuthService
import DeliveryService
import Foundation
import Testing

@testable import SesameKit

/// SesameKit's wire types against the OpenAPI documents, which are the contract: SesameKit keeps
/// its own small copies (an app gets no dependency beyond swift-crypto), and this holds them to
/// the documents. A request SesameKit sends names only documented fields and every required one;
/// an answer with only the documented required fields decodes, and so does one with every field.
@Suite("SesameKit's wire types and the OpenAPI documents")
struct WireContractTests {
    /// An OpenAPI document, with `$ref`s into its components resolved.
    struct Document {
        let root: [String: Any]

        init(_ json: String) throws {
            root = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        }

        func resolve(_ schema: [String: Any]) throws -> [String: Any] {
            guard let reference = schema["$ref"] as? String else { return schema }
            var node: Any = root
            for part in reference.dropFirst(2).split(separator: "/") { node = try #require((node as? [String: Any])?[String(part)]) }
            return try resolve(try #require(node as? [String: Any]))
        }

        func operation(_ method: String, _ path: String) throws -> [String: Any] {
            let paths = try #require(root["paths"] as? [String: Any])
            return try #require((paths[path] as? [String: Any])?[method] as? [String: Any], "\(method) \(path) is not in the document")
        }

        func requestSchema(_ method: String, _ path: String) throws -> [String: Any] {
            let body = try #require(try operation(method, path)["requestBody"] as? [String: Any])
            let content = try #require((body["content"] as? [String: Any])?["application/json"] as? [String: Any])
            return try resolve(try #require(content["schema"] as? [String: Any]))
        }

        func answerSchema(_ method: String, _ path: String, status: String = "200") throws -> [String: Any] {
            let responses = try #require(try operation(method, path)["responses"] as? [String: Any])
            let answer = try resolve(try #require(responses[status] as? [String: Any]))
            let content = try #require((answer["content"] as? [String: Any])?["application/json"] as? [String: Any])
            return try resolve(try #require(content["schema"] as? [String: Any]))
        }

        /// A value the schema admits: its first enum value, or a plain one of its type; objects
        /// with their required members only, or with every member.
        func sample(_ schema: [String: Any], everyMember: Bool) throws -> Any {
            let schema = try resolve(schema)
            if let values = schema["enum"] as? [Any], let first = values.first { return first }
            if let constant = schema["const"] { return constant }
            if let options = (schema["oneOf"] ?? schema["anyOf"]) as? [[String: Any]], let first = options.first {
                return try sample(first, everyMember: everyMember)
            }
            let type = (schema["type"] as? String) ?? (schema["type"] as? [String])?.first { $0 != "null" } ?? "object"
            switch type {
            case "string": return "x"
            case "integer": return max(1, (schema["minimum"] as? Int) ?? 1)
            case "number": return 1.5
            case "boolean": return true
            case "array": return [try sample((schema["items"] as? [String: Any]) ?? [:], everyMember: everyMember)]
            default:
                let properties = (schema["properties"] as? [String: [String: Any]]) ?? [:]
                let required = Set((schema["required"] as? [String]) ?? [])
                var object: [String: Any] = [:]
                for (name, property) in properties where everyMember || required.contains(name) {
                    object[name] = try sample(property, everyMember: everyMember)
                }
                return object
            }
        }
    }

    static func auth() throws -> Document { try Document(AuthService.openAPIDocument) }
    static func delivery() throws -> Document { try Document(DeliveryService.openAPIDocument) }

    /// `value` sent as SesameKit sends it: only documented members, every required one.
    func expectRequest(_ value: some Encodable, matches schema: [String: Any], _ name: String) throws {
        let sent = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(value)) as? [String: Any])
        let documented = Set((schema["properties"] as? [String: Any])?.keys.map { $0 } ?? [])
        let required = Set((schema["required"] as? [String]) ?? [])
        #expect(Set(sent.keys).subtracting(documented).sorted() == [], "\(name) sends members the document does not have")
        #expect(required.subtracting(sent.keys).sorted() == [], "\(name) leaves out members the document requires")
    }

    /// An answer as the document describes it decodes as SesameKit reads it: with only its required
    /// members (SesameKit needs nothing the server may leave out), and with all of them.
    func expectAnswer(_ schema: [String: Any], in document: Document, decodes read: (Data) throws -> Void, _ name: String) throws {
        for everyMember in [false, true] {
            let sample = try JSONSerialization.data(withJSONObject: try document.sample(schema, everyMember: everyMember))
            #expect(throws: Never.self, "\(name) cannot read \(String(decoding: sample, as: UTF8.self))") { try read(sample) }
        }
    }

    @Test("the auth flows: the bodies SesameKit sends are the documented ones")
    func authRequests() throws {
        let auth = try Self.auth()
        for deviceToken in [nil, Data("token".utf8).base64EncodedString()] {
            try expectRequest(
                AuthMessages.Attest(attestationObject: "a", keyId: "k", nonce: "n", teamId: "t", bundleId: "b", appVersion: "1.0", deviceToken: deviceToken),
                matches: try auth.requestSchema("post", "/v1/auth/attest"), "Attest")
        }
        try expectRequest(
            AuthMessages.ChallengeRequest(teamId: "A1B2C3D4E5", bundleId: "com.example.app"),
            matches: try auth.requestSchema("post", "/v1/auth/challenge"), "ChallengeRequest")
        try expectRequest(
            AuthMessages.Refresh(refreshToken: "r", assertion: "a", clientData: "c", appVersion: "1.0"),
            matches: try auth.requestSchema("post", "/v1/auth/refresh"), "Refresh")
        try expectRequest(
            AuthMessages.DebugExchange(debugToken: "d", teamId: "t", bundleId: "b", appVersion: "1.0"),
            matches: try auth.requestSchema("post", "/v1/auth/debug"), "DebugExchange")
        try expectRequest(
            AuthMessages.Unattested(nonce: "n", teamId: "t", bundleId: "b", appVersion: "1.0"),
            matches: try auth.requestSchema("post", "/v1/auth/unattested"), "Unattested")
        try expectRequest(
            APITokenRequest(audience: "https://api.example.com", binding: "b", limitedUse: true),
            matches: try auth.requestSchema("post", "/v1/auth/api-token"), "APITokenRequest")
    }

    @Test("the auth flows: SesameKit reads every documented answer")
    func authAnswers() throws {
        let auth = try Self.auth()
        try expectAnswer(try auth.answerSchema("post", "/v1/auth/challenge"), in: auth, decodes: { _ = try JSONDecoder().decode(AuthMessages.Challenge.self, from: $0) }, "Challenge")
        for path in ["/v1/auth/attest", "/v1/auth/refresh", "/v1/auth/debug", "/v1/auth/unattested"] {
            try expectAnswer(try auth.answerSchema("post", path), in: auth, decodes: { _ = try JSONDecoder().decode(AuthMessages.Tokens.self, from: $0) }, "Tokens of \(path)")
        }
        try expectAnswer(try auth.answerSchema("post", "/v1/auth/api-token"), in: auth, decodes: { _ = try JSONDecoder().decode(APITokenReply.self, from: $0) }, "APITokenReply")
        try expectAnswer(try auth.resolve(["$ref": "#/components/schemas/Error"]), in: auth, decodes: { _ = try JSONDecoder().decode(SesameAPI.Refusal.self, from: $0) }, "Refusal")
    }

    @Test("delivery: SesameKit reads the documented config answer and blob link")
    func deliveryAnswers() throws {
        let delivery = try Self.delivery()
        struct Unreadable: Error {}
        try expectAnswer(try delivery.answerSchema("get", "/v1/config"), in: delivery, decodes: { if ConfigReply($0) == nil { throw Unreadable() } }, "ConfigReply")
        try expectAnswer(try delivery.answerSchema("get", "/v1/blob/{key}"), in: delivery, decodes: { _ = try JSONDecoder().decode(BlobLink.self, from: $0) }, "BlobLink")
        try expectAnswer(try delivery.resolve(["$ref": "#/components/schemas/Error"]), in: delivery, decodes: { _ = try JSONDecoder().decode(SesameAPI.Refusal.self, from: $0) }, "Refusal")
    }

    @Test("the check sees a drift: a member SesameKit needs that the document does not require")
    func seesADrift() throws {
        let auth = try Self.auth()
        var schema = try auth.answerSchema("post", "/v1/auth/challenge")
        schema["required"] = []  // as if the server stopped promising `nonce`
        let sample = try JSONSerialization.data(withJSONObject: try auth.sample(schema, everyMember: false))
        #expect(throws: (any Error).self) { try JSONDecoder().decode(AuthMessages.Challenge.self, from: sample) }
    }
}

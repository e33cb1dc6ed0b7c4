import Foundation
import HTTPTypes
import PostgresNIO
import SesameTestSupport
import SesameVault
import Testing

@Suite("Admin: config schemas", .timeLimit(.minutes(3)))
struct ConfigSchemaAPITests {
    static var appSchema: [String: Any] { [
        "type": "object", "required": ["endpoints"],
        "properties": [
            "endpoints": ["type": "object", "properties": ["api": ["type": "string", "pattern": "^https://"]], "required": ["api"]],
            "timeout": ["type": "integer", "minimum": 1, "maximum": 60],
        ],
    ] }
    static var patternSchema: [String: Any] { [
        "$defs": ["flag": ["type": "boolean"]],
        "properties": ["features": ["type": "object", "additionalProperties": ["$ref": "#/$defs/flag"]]],
    ] }

    static func violations(_ reply: AdminHarness.Reply) -> [[String: Any]] {
        ((reply.json["error"] as? [String: Any])?["violations"] as? [[String: Any]]) ?? []
    }

    @Test("an upload that does not match the app's and the pattern's schemas is refused with every violation by path; one that does is published")
    func uploads() async throws {
        try await AdminHarness.run { harness in
            let key = try await harness.createKey()
            let attached = try await harness.call(.put, "/v1/admin/config/schema", credential: key, json: ["schema": Self.appSchema])
            #expect(attached.status == .ok, "\(attached.json)")
            #expect(try await harness.call(.put, "/v1/admin/config/schema", credential: key, json: ["version": "2.*", "schema": Self.patternSchema]).status == .ok)

            let bad: [String: Any] = ["endpoints": ["api": "http://plain.example.com"], "timeout": 90, "features": ["chat": "yes"]]
            let refused = try await harness.upload(bad, version: "2.*", key: key)
            #expect(refused.status == .unprocessableContent && refused.errorCode == "config_invalid", "\(refused.json)")
            let found = Self.violations(refused).map { "\($0["path"] as? String ?? "") \($0["keyword"] as? String ?? "") \($0["schema"] as? String ?? "")" }
            #expect(found.sorted() == ["/endpoints/api pattern app", "/features/chat type pattern '2.*'", "/timeout maximum app"], "\(found)")
            #expect(refused.errorMessage?.contains("3 violations") == true)

            // The pattern's schema does not apply to another pattern; the app's does.
            let missing = try await harness.upload(["features": ["chat": "yes"]], version: "3.*", key: key)
            #expect(Self.violations(missing).map { $0["path"] as? String } == [""] && Self.violations(missing).first?["keyword"] as? String == "required")

            let good: [String: Any] = ["endpoints": ["api": "https://api.example.com"], "timeout": 30, "features": ["chat": true]]
            let published = try await harness.upload(good, version: "2.*", key: key)
            #expect(published.status == .ok && published["revision"] as? Int == 1, "\(published.json)")

            let history = try await harness.call(.get, "/v1/admin/config/history?version=2.*", credential: key)
            #expect((history["revisions"] as? [[String: Any]])?.count == 1, "a refused upload left a revision")
        }
    }

    @Test("a schema a published config breaks is refused; a schema with a keyword Sesame does not enforce is refused; a broken $ref is refused")
    func attachRefusals() async throws {
        try await AdminHarness.run { harness in
            let key = try await harness.createKey()
            #expect(try await harness.upload(["timeout": 90], version: "*", key: key).status == .ok)
            let breaks = try await harness.call(.put, "/v1/admin/config/schema", credential: key, json: ["schema": ["properties": ["timeout": ["maximum": 60]]]])
            #expect(breaks.status == .unprocessableContent && breaks.errorCode == "config_invalid")
            #expect((Self.violations(breaks).first?["message"] as? String)?.contains("published revision 1 of '*'") == true, "\(breaks.json)")

            let unsupported = try await harness.call(.put, "/v1/admin/config/schema", credential: key, json: ["schema": ["anyOf": [["type": "object"]]]])
            #expect(unsupported.status == .unprocessableContent && unsupported.errorCode == "schema_invalid")
            #expect(unsupported.errorMessage?.contains("/anyOf") == true && unsupported.errorMessage?.contains("does not enforce") == true)

            let dangling = try await harness.call(.put, "/v1/admin/config/schema", credential: key, json: ["schema": ["$ref": "#/$defs/missing"]])
            #expect(dangling.status == .unprocessableContent && dangling.errorCode == "schema_invalid")
            let remote = try await harness.call(.put, "/v1/admin/config/schema", credential: key, json: ["schema": ["$ref": "https://example.com/s.json"]])
            #expect(remote.status == .unprocessableContent && remote.errorCode == "schema_invalid")

            let schemas = try await harness.call(.get, "/v1/admin/config/schema", credential: key)
            #expect((schemas["schemas"] as? [Any])?.isEmpty == true, "a refused schema was stored")
        }
    }

    @Test("validate is a dry run; zero-knowledge uploads are ciphertext the server does not check; schemas are audited and detached")
    func validateAndDetach() async throws {
        try await AdminHarness.run { harness in
            let key = try await harness.createKey()
            #expect(try await harness.call(.put, "/v1/admin/config/schema", credential: key, json: ["schema": Self.appSchema]).status == .ok)
            let dry = try await harness.call(.post, "/v1/admin/config/validate", credential: key, json: ["version": "1.*", "config": ["timeout": 0]])
            #expect(dry.status == .ok && dry["valid"] as? Bool == false)
            #expect((dry["violations"] as? [[String: Any]])?.count == 2)
            let manifest = try await harness.call(.get, "/v1/admin/config", credential: key)
            #expect((manifest["patterns"] as? [Any])?.isEmpty == true, "a dry run published something")

            // The app's schema requires `endpoints`; the envelope has none, and the server cannot look inside it.
            let envelope = try VaultEnvelope.seal(Data(#"{"timeout": 0}"#.utf8), password: "vault", cost: .init(n: 1 << 10, r: 8, p: 1))
            let sealed = try await harness.upload(try JSONSerialization.jsonObject(with: try envelope.encoded()), version: "*", key: key)
            #expect(sealed.status == .ok, "\(sealed.json)")

            let removed = try await harness.call(.delete, "/v1/admin/config/schema", credential: key)
            #expect(removed.status == .ok)
            let again = try await harness.call(.delete, "/v1/admin/config/schema", credential: key)
            #expect(again.status == .notFound && again.errorCode == "schema_not_found")
            #expect(try await harness.upload(["anything": true], version: "1.*", key: key).status == .ok)

            var actions: [String] = []
            for try await action in try await harness.database.query("SELECT action FROM audit_log WHERE action LIKE 'config.schema.%' ORDER BY id").decode(String.self) {
                actions.append(action)
            }
            #expect(actions == ["config.schema.set", "config.schema.remove"])
        }
    }

    /// Nested `depth` levels: ["a": ["a": … true]].
    static func nested(_ depth: Int) -> Any { (0..<depth).reduce(true as Any) { inner, _ in ["a": inner] } }

    @Test("a backtracking pattern and a deep config against a looping $ref answer 422 schema_too_complex within 2 s; another app answers meanwhile; nothing is published")
    func pathologicalSchemas() async throws {
        try await AdminHarness.run { harness in
            let key = try await harness.createKey()
            let other = try await harness.createKey(bundleID: "com.example.other")
            let backtracking: [String: Any] = ["properties": ["name": ["pattern": "(a*)*b"]]]
            #expect(try await harness.call(.put, "/v1/admin/config/schema", credential: key, json: ["version": "1.*", "schema": backtracking]).status == .ok)

            let start = ContinuousClock.now
            async let refused = harness.upload(["name": String(repeating: "a", count: 41)], version: "1.*", key: key)
            try await Task.sleep(for: .milliseconds(100))
            let otherStart = ContinuousClock.now
            let otherUpload = try await harness.upload(["feature": true], version: "*", key: other)
            let otherElapsed = ContinuousClock.now - otherStart
            let reply = try await refused
            let elapsed = ContinuousClock.now - start
            #expect(reply.status == .unprocessableContent && reply.errorCode == "schema_too_complex", "\(reply.json)")
            #expect(elapsed < .seconds(2), "the refusal took \(elapsed)")
            // Loose: the machine may be busy; before the check left the request's thread it took the refusal's 17 s.
            #expect(otherUpload.status == .ok && otherElapsed < .milliseconds(1_500), "another app's upload took \(otherElapsed)")

            let dry = try await harness.call(
                .post, "/v1/admin/config/validate", credential: key, json: ["version": "1.*", "config": ["name": String(repeating: "a", count: 41)]])
            #expect(dry.status == .unprocessableContent && dry.errorCode == "schema_too_complex", "\(dry.json)")

            // Eight references that loop through every level of a 500-deep config: refused, and the service lives.
            var definitions: [String: Any] = ["d7": ["additionalProperties": ["$ref": "#/$defs/d0"]]]
            for index in 0..<7 { definitions["d\(index)"] = ["$ref": "#/$defs/d\(index + 1)"] }
            let looping: [String: Any] = ["$defs": definitions, "$ref": "#/$defs/d0"]
            #expect(try await harness.call(.put, "/v1/admin/config/schema", credential: key, json: ["version": "2.*", "schema": looping]).status == .ok)
            let deepStart = ContinuousClock.now
            let deep = try await harness.upload(Self.nested(500), version: "2.*", key: key)
            #expect(deep.status == .unprocessableContent && deep.errorCode == "schema_too_complex", "\(deep.json)")
            #expect(ContinuousClock.now - deepStart < .seconds(2), "the deep config's refusal took \(ContinuousClock.now - deepStart)")
            #expect(try await harness.upload(Self.nested(5), version: "2.*", key: key).status == .ok)

            let history = try await harness.call(.get, "/v1/admin/config/history?version=1.*", credential: key)
            #expect((history["revisions"] as? [[String: Any]])?.isEmpty == true, "a refused upload left a revision: \(history.json)")
        }
    }
}

import Foundation
import HTTPTypes
import PostgresNIO
import SesameTestSupport
import Testing

/// Attested relays, admin's side (issue 60): a relay made, changed with its injected headers kept or
/// replaced, listed without their values, removed; every field's bound; the headers sealed, never in
/// an answer or the audit log.
@Suite("Admin: attested relays", .timeLimit(.minutes(2)))
struct RelayAdminTests {
    static let secret = "Bearer sk-relay-secret-0123456789"
    static var openAI: [String: Any] {
        [
        "upstream": "https://api.openai.example/", "methods": ["POST"], "paths": ["/v1/chat/completions", "/v1/models/*"],
        "headers": ["Authorization": secret], "perInstallPerMinute": 20,
        ]
    }

    static func ciphertext(_ harness: AdminHarness, _ name: String) async throws -> Data? {
        let rows = try await harness.database.query("SELECT headers_ciphertext FROM relays WHERE name = \(name)")
        for try await sealed in rows.decode(Data.self) { return sealed }
        return nil
    }

    @Test("made, listed without the header values, changed keeping or replacing them, removed; audited by name only")
    func lifecycle() async throws {
        try await AdminHarness.run { harness in
            let credential = try await harness.createKey()
            let made = try await harness.call(.put, "/v1/admin/relays/openai", credential: credential, json: Self.openAI)
            #expect(made.status == .ok, "\(made.json)")
            let relay = try #require(made["relay"] as? [String: Any])
            #expect(relay["upstream"] as? String == "https://api.openai.example" && relay["headerNames"] as? [String] == ["Authorization"])
            #expect(relay["leastTier"] as? String == "attested" && relay["proof"] as? String == "none" && relay["timeoutSeconds"] as? Int == 60)
            #expect(relay["perInstallPerMinute"] as? Int == 20 && relay["maxRequestBytes"] as? Int == 1 << 20)
            #expect(!String(decoding: made.body, as: UTF8.self).contains("sk-relay-secret"))
            let sealed = try #require(try await Self.ciphertext(harness, "openai"))
            #expect(sealed.range(of: Data("sk-relay-secret".utf8)) == nil, "sealed, not in clear")

            let listed = try await harness.call(.get, "/v1/admin/relays", credential: credential)
            #expect((listed["relays"] as? [[String: Any]])?.map { $0["name"] as? String } == ["openai"])
            #expect(!String(decoding: listed.body, as: UTF8.self).contains("sk-relay-secret"))

            // A change without headers keeps them; with headers replaces them.
            var changed = Self.openAI
            changed.removeValue(forKey: "headers")
            changed["leastTier"] = "debug"
            let kept = try await harness.call(.put, "/v1/admin/relays/openai", credential: credential, json: changed)
            #expect(kept.status == .ok && (kept["relay"] as? [String: Any])?["leastTier"] as? String == "debug", "\(kept.json)")
            #expect(try await Self.ciphertext(harness, "openai") == sealed)
            changed["headers"] = ["X-Api-Key": "k2"]
            let replaced = try await harness.call(.put, "/v1/admin/relays/openai", credential: credential, json: changed)
            #expect((replaced["relay"] as? [String: Any])?["headerNames"] as? [String] == ["X-Api-Key"])
            #expect(try await Self.ciphertext(harness, "openai") != sealed)

            let audit = try await harness.call(.get, "/v1/admin/audit", credential: credential)
            let text = String(decoding: audit.body, as: UTF8.self)
            #expect(text.contains("relay.set") && !text.contains("sk-relay-secret") && !text.contains("\"k2\""), "names only in the audit log")

            #expect(try await harness.call(.delete, "/v1/admin/relays/openai", credential: credential).status == .ok)
            let again = try await harness.call(.delete, "/v1/admin/relays/openai", credential: credential)
            #expect(again.status == .notFound && again.errorCode == "relay_not_found")
            #expect(String(decoding: try await harness.call(.get, "/v1/admin/audit", credential: credential).body, as: UTF8.self).contains("relay.remove"))
        }
    }

    @Test("the sealed headers stay with their origin: a move to another origin without them is refused (relay_headers_required), a path change keeps them, a move with them binds them anew; a row moved by a write shows them unusable")
    func headersBoundToOrigin() async throws {
        try await AdminHarness.run { harness in
            let credential = try await harness.createKey()
            #expect(try await harness.call(.put, "/v1/admin/relays/openai", credential: credential, json: Self.openAI).status == .ok)
            let sealed = try #require(try await Self.ciphertext(harness, "openai"))
            var moved = Self.openAI
            moved.removeValue(forKey: "headers")
            for upstream in ["https://attacker.example", "https://api.openai.example:8443", "https://API.openai.example.evil.example"] {
                moved["upstream"] = upstream
                let refused = try await harness.call(.put, "/v1/admin/relays/openai", credential: credential, json: moved)
                #expect(refused.status == .badRequest && refused.errorCode == "relay_headers_required", "\(upstream): \(refused.json)")
                #expect(!String(decoding: refused.body, as: UTF8.self).contains("sk-relay-secret"))
            }
            #expect(try await Self.ciphertext(harness, "openai") == sealed, "nothing changed")
            let relays = try await harness.call(.get, "/v1/admin/relays", credential: credential)["relays"] as? [[String: Any]]
            #expect(relays?.first?["upstream"] as? String == "https://api.openai.example" && relays?.first?["headersUsable"] as? Bool == true)

            // The same origin (any case, its default port written out) with another base path keeps them.
            moved["upstream"] = "https://API.openai.example:443/v2"
            let kept = try await harness.call(.put, "/v1/admin/relays/openai", credential: credential, json: moved)
            #expect(kept.status == .ok && (kept["relay"] as? [String: Any])?["headersUsable"] as? Bool == true, "\(kept.json)")
            #expect(try await Self.ciphertext(harness, "openai") == sealed)

            // Given again, they are sealed for the new origin.
            moved["upstream"] = "https://api.other.example"
            moved["headers"] = ["Authorization": "Bearer sk-other"]
            let rebound = try await harness.call(.put, "/v1/admin/relays/openai", credential: credential, json: moved)
            #expect(rebound.status == .ok && (rebound["relay"] as? [String: Any])?["headersUsable"] as? Bool == true, "\(rebound.json)")
            #expect(try await Self.ciphertext(harness, "openai") != sealed)

            // Moved by a write to its row (not the API): listed as unusable, and only headers given again make it usable.
            try await harness.database.query("UPDATE relays SET upstream = 'https://attacker.example' WHERE name = 'openai'")
            let listed = try await harness.call(.get, "/v1/admin/relays", credential: credential)["relays"] as? [[String: Any]]
            #expect(listed?.first?["headersUsable"] as? Bool == false, "\(String(describing: listed))")
            moved.removeValue(forKey: "headers")
            moved["upstream"] = "https://attacker.example"
            let stillRefused = try await harness.call(.put, "/v1/admin/relays/openai", credential: credential, json: moved)
            #expect(stillRefused.errorCode == "relay_headers_required", "kept headers never follow a moved row: \(stillRefused.json)")
        }
    }

    @Test("refused field by field: name, upstream (https, public, no query), methods, paths, headers; a new relay needs headers; another app sees nothing; 20 at most")
    func bounds() async throws {
        try await AdminHarness.run { harness in
            let credential = try await harness.createKey()
            func refusal(_ name: String, _ change: (inout [String: Any]) -> Void) async throws -> AdminHarness.Reply {
                var body = Self.openAI
                change(&body)
                return try await harness.call(.put, "/v1/admin/relays/\(name)", credential: credential, json: body)
            }
            let cases: [(String, String, (inout [String: Any]) -> Void)] = [
                ("Bad_Name", "name", { _ in }),
                ("a", "upstream", { $0["upstream"] = "http://api.example.com" }),
                ("a", "upstream", { $0["upstream"] = "https://127.0.0.1" }),
                ("a", "upstream", { $0["upstream"] = "https://api.example.com/v1?key=1" }),
                ("a", "upstream", { $0["upstream"] = "https://user:pw@api.example.com" }),
                ("a", "methods", { $0["methods"] = ["POST", "POST"] }),
                ("a", "paths", { $0["paths"] = ["/v1/../admin"] }),
                ("a", "paths", { $0["paths"] = ["/v1/%2e%2e"] }),
                ("a", "headers", { $0["headers"] = ["Host": "evil.example"] }),
                ("a", "headers", { $0.removeValue(forKey: "headers") }),
                ("a", "timeoutSeconds", { $0["timeoutSeconds"] = 301 }),
            ]
            for (name, field, change) in cases {
                let refused = try await refusal(name, change)
                #expect(refused.status == .badRequest && (refused.errorMessage ?? "").contains(field), "\(field): \(refused.json)")
                #expect(!String(decoding: refused.body, as: UTF8.self).contains("evil.example") || field != "headers", "the value is not echoed")
            }
            let unknownMethod = try await refusal("a") { $0["methods"] = ["CONNECT"] }
            #expect(unknownMethod.status == .badRequest)

            for index in 0..<20 {
                #expect(try await harness.call(.put, "/v1/admin/relays/r\(index)", credential: credential, json: Self.openAI).status == .ok)
            }
            let tooMany = try await harness.call(.put, "/v1/admin/relays/r20", credential: credential, json: Self.openAI)
            #expect(tooMany.status == .conflict && tooMany.errorCode == "too_many_relays", "\(tooMany.json)")
            #expect(try await harness.call(.put, "/v1/admin/relays/r3", credential: credential, json: Self.openAI).status == .ok, "changing one is not a new one")

            let other = try await harness.createKey(teamID: "OTHERTEAM1", bundleID: "com.example.other")
            #expect((try await harness.call(.get, "/v1/admin/relays", credential: other)["relays"] as? [Any])?.isEmpty == true)
            #expect(try await harness.call(.delete, "/v1/admin/relays/r1", credential: other).status == .notFound)
        }
    }
}

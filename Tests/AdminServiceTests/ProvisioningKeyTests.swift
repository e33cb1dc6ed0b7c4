import Crypto
import Foundation
import HTTPTypes
import PostgresNIO
import SesameTestSupport
import Testing

@Suite("Admin: provisioning keys", .timeLimit(.minutes(2)))
struct ProvisioningKeyTests {
    @Test("the operator registers an app and its first key; the key works, is stored only as a hash, and names no secret in the audit")
    func createAndUse() async throws {
        try await AdminHarness.run { harness in
            let key = try await harness.createKey()
            #expect(key.hasPrefix("sk_prod_"))
            #expect(key.count == 51)
            #expect(try await harness.call(.get, "/v1/admin/config", credential: key).status == .ok)

            // Only the SHA-256 of the key is kept, and nothing stored contains the key.
            let rows = try await harness.database.query("SELECT key_hash, key_hint FROM provisioning_keys")
            for try await (hash, hint) in rows.decode((Data, String).self) {
                #expect(hash == Data(SHA256.hash(data: Data(key.utf8))))
                #expect(hint == "sk_prod_…" + key.suffix(4))
            }
            let everything = try await harness.database.query(
                "SELECT (SELECT string_agg(details::text || actor, '') FROM audit_log) || (SELECT string_agg(name, '') FROM provisioning_keys)")
            for try await text in everything.decode(String.self) { #expect(!text.contains(key.dropFirst(8).prefix(20))) }

            // A key creates more keys for its own app.
            let second = try await harness.call(
                .post, "/v1/admin/keys/create", credential: key,
                json: ["teamId": AdminHarness.teamID, "bundleId": AdminHarness.bundleID, "keyName": "laptop"])
            #expect(second.status == .ok)
            #expect(second["key"] as? String != key)
            // Its id reads as the audit log and webhooks write it: lower case.
            let keyID = try #require(second["keyId"] as? String)
            #expect(keyID == keyID.lowercased() && UUID(uuidString: keyID) != nil, "\(keyID)")
            let listed = try await harness.call(.get, "/v1/admin/keys", credential: key)
            let ids = ((listed["keys"] as? [[String: Any]]) ?? []).compactMap { $0["keyId"] as? String }
            #expect(ids.contains(keyID) && ids.allSatisfy { $0 == $0.lowercased() }, "\(listed.json)")
            var audited = false
            for try await details in try await harness.database.query("SELECT details::text FROM audit_log WHERE action = 'key.create'").decode(String.self) {
                audited = audited || details.contains(keyID)
            }
            #expect(audited, "the audit log names the key as the answer does")
        }
    }

    @Test("missing, malformed, unknown, wrong-operator and revoked credentials get 401 with a JSON error")
    func refusedCredentials() async throws {
        try await AdminHarness.run { harness in
            let key = try await harness.createKey()
            let unknown = "sk_prod_" + String(repeating: "A", count: 43)
            for credential in [nil, "sk_prod_short", unknown, "not-the-operator-token-0123456789abcdef", "", String(key.dropLast())] {
                let reply = try await harness.call(.get, "/v1/admin/config", credential: credential)
                #expect(reply.status == .unauthorized, "\(credential ?? "nil")")
                #expect(reply.errorCode == "unauthorized")
            }
            let revoked = try await harness.call(.post, "/v1/admin/keys/revoke", credential: key, json: ["key": key])
            #expect(revoked.status == .ok)
            #expect(try await harness.call(.get, "/v1/admin/config", credential: key).status == .unauthorized)
            // Registering an app needs the operator token, not a key.
            let noOperator = try await harness.call(
                .post, "/v1/admin/keys/create", credential: nil, json: ["teamId": "NEWTEAM123", "bundleId": "com.example.new"])
            #expect(noOperator.status == .unauthorized)
        }
    }

    @Test("another app's key gets 404, exactly as for an app that does not exist")
    func otherAppsAreInvisible() async throws {
        try await AdminHarness.run { harness in
            let mine = try await harness.createKey()
            let theirs = try await harness.createKey(teamID: "OTHERTEAM1", bundleID: "com.example.other")
            let existing = try await harness.call(
                .post, "/v1/admin/keys/create", credential: mine, json: ["teamId": "OTHERTEAM1", "bundleId": "com.example.other"])
            let missing = try await harness.call(
                .post, "/v1/admin/keys/create", credential: mine, json: ["teamId": "NOSUCHTEAM", "bundleId": "com.example.none"])
            #expect(existing.status == .notFound)
            #expect(existing.body == missing.body)
            // Revoking another app's key is refused the same way, and the key keeps working.
            let revoke = try await harness.call(.post, "/v1/admin/keys/revoke", credential: mine, json: ["key": theirs])
            #expect(revoke.status == .notFound)
            #expect(try await harness.call(.get, "/v1/admin/config", credential: theirs).status == .ok)
            // And each key sees only its own app's configs.
            #expect(try await harness.upload(["a": 1], version: "*", key: theirs).status == .ok)
            let manifest = try await harness.call(.get, "/v1/admin/config", credential: mine)
            #expect((manifest["patterns"] as? [Any])?.isEmpty == true)
        }
    }

    @Test("malformed create requests are 400s naming the field")
    func malformedCreate() async throws {
        try await AdminHarness.run { harness in
            for body: [String: Any] in [
                ["teamId": "short", "bundleId": "com.example.app"], ["teamId": "TEAMID1234", "bundleId": "bad bundle"],
                ["teamId": "TEAMID1234"], ["teamId": 12, "bundleId": "com.example.app"],
            ] {
                let reply = try await harness.call(.post, "/v1/admin/keys/create", credential: AdminHarness.operatorToken, json: body)
                #expect(reply.status == .badRequest, "\(body)")
                #expect(reply.errorCode != nil)
            }
        }
    }
}

@Suite("Admin: made-up credentials from one address", .timeLimit(.minutes(3)))
struct FailedCredentialTests {
    @Test("150 made-up provisioning keys from one address: the first 100 are 401, the rest 429 before any lookup; a request with no credential is not counted")
    func floodIsRefused() async throws {
        try await AdminHarness.run { harness in
            _ = try await harness.createKey()
            var statuses: [Int] = []
            let start = ContinuousClock.now
            for _ in 0..<150 {
                let madeUp = "sk_prod_" + String((0..<43).map { _ in "abcdefghijklmnopqrstuvwxyz0123456789".randomElement()! })
                statuses.append(Int(try await harness.call(.get, "/v1/admin/config", credential: madeUp).status.code))
            }
            #expect(statuses.prefix(100).allSatisfy { $0 == 401 }, "\(Set(statuses.prefix(100)))")
            // The budget regains two a second while the flood runs: that many more may pass to a lookup.
            let regained = Int((ContinuousClock.now - start).components.seconds) * 2 + 2
            let rest = statuses.suffix(50)
            #expect(rest.allSatisfy { $0 == 429 || $0 == 401 } && rest.filter { $0 == 401 }.count <= regained, "\(rest)")
            let refused = try await harness.call(.get, "/v1/admin/config", credential: "sk_prod_" + String(repeating: "x", count: 43))
            #expect(refused.status == .tooManyRequests && refused.errorCode == "rate_limited")
            // No credential presented costs no lookup and is answered as before.
            #expect(try await harness.call(.get, "/v1/admin/config", credential: nil).status == .unauthorized)
        }
    }
}

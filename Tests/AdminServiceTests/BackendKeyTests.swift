import Crypto
import Foundation
import HTTPTypes
import PostgresNIO
import SesameTestSupport
import Testing

@Suite("Admin: backend keys", .timeLimit(.minutes(2)))
struct BackendKeyTests {
    @Test("a provisioning key makes, lists and revokes backend keys; each shown once, stored as a hash, audited")
    func lifecycle() async throws {
        try await AdminHarness.run { harness in
            let key = try await harness.createKey()
            let created = try await harness.call(.post, "/v1/admin/backend-keys", credential: key, json: ["name": "payments-api"])
            #expect(created.status == .ok, "\(created.json)")
            let backendKey = try #require(created["backendKey"] as? String)
            #expect(backendKey.hasPrefix("bk_prod_") && backendKey.count == 51)
            let keyID = try #require((created["key"] as? [String: Any])?["keyId"] as? String)

            let rows = try await harness.database.query("SELECT key_hash, key_hint, name FROM backend_keys")
            var stored = 0
            for try await (hash, hint, name) in rows.decode((Data, String, String).self) {
                stored += 1
                #expect(hash == Data(SHA256.hash(data: Data(backendKey.utf8))))
                #expect(hint == "bk_prod_…" + backendKey.suffix(4) && name == "payments-api")
            }
            #expect(stored == 1)

            let listed = try await harness.call(.get, "/v1/admin/backend-keys", credential: key)
            let keys = try #require(listed["keys"] as? [[String: Any]])
            #expect(keys.count == 1 && keys.first?["keyId"] as? String == keyID && keys.first?["revokedAt"] == nil)
            #expect(!String(decoding: listed.body, as: UTF8.self).contains(backendKey.dropFirst(8).prefix(20)))

            let revoked = try await harness.call(.delete, "/v1/admin/backend-keys/\(keyID)", credential: key)
            #expect(revoked.status == .ok, "\(revoked.json)")
            let again = try await harness.call(.delete, "/v1/admin/backend-keys/\(keyID)", credential: key)
            #expect(again.status == .notFound && again.errorCode == "backend_key_not_found")
            let afterRevoke = try #require(try await harness.call(.get, "/v1/admin/backend-keys", credential: key)["keys"] as? [[String: Any]])
            #expect(afterRevoke.first?["revokedAt"] as? String != nil)

            let audit = try await harness.database.query("SELECT action, actor FROM audit_log WHERE action LIKE 'backend_key.%' ORDER BY id")
            var actions: [String] = []
            for try await (action, actor) in audit.decode((String, String).self) {
                actions.append(action)
                #expect(actor.hasPrefix("key:"))
            }
            #expect(actions == ["backend_key.create", "backend_key.revoke"])

            // A key bound to an audience: only one the policy lists.
            let stray = try await harness.call(.post, "/v1/admin/backend-keys", credential: key, json: ["name": "x", "audience": "https://api.example.com"])
            #expect(stray.status == .badRequest && stray.errorCode == "invalid_request", "\(stray.json)")
            try await harness.database.query(
                "UPDATE apps SET policy = jsonb_set(policy, '{apiAudiences}', '[\"https://api.example.com\"]'::jsonb)")
            let bound = try await harness.call(.post, "/v1/admin/backend-keys", credential: key, json: ["name": "x", "audience": "https://api.example.com"])
            #expect(bound.status == .ok && (bound["key"] as? [String: Any])?["audience"] as? String == "https://api.example.com", "\(bound.json)")
        }
    }

    @Test("a backend key manages nothing: the management API refuses it as it refuses any stranger")
    func backendKeyIsNoManagementCredential() async throws {
        try await AdminHarness.run { harness in
            let key = try await harness.createKey()
            let backendKey = try #require(
                try await harness.call(.post, "/v1/admin/backend-keys", credential: key, json: ["name": "api"])["backendKey"] as? String)
            for (method, path) in [(HTTPRequest.Method.get, "/v1/admin/config"), (.get, "/v1/admin/backend-keys"), (.post, "/v1/admin/backend-keys")] {
                let reply = try await harness.call(method, path, credential: backendKey, json: method == .post ? ["name": "more"] : nil)
                #expect(reply.status == .unauthorized, "\(method) \(path): \(reply.status)")
            }
        }
    }

    @Test("names are 1 to 100 characters on one line; another app's key id is not found; the operator token needs an app")
    func refusals() async throws {
        try await AdminHarness.run { harness in
            let mine = try await harness.createKey()
            let theirs = try await harness.createKey(teamID: "OTHERTEAM1", bundleID: "com.example.other")
            for name in ["", "   ", String(repeating: "n", count: 101), "two\nlines"] {
                let reply = try await harness.call(.post, "/v1/admin/backend-keys", credential: mine, json: ["name": name])
                #expect(reply.status == .badRequest, "\(name.debugDescription)")
            }
            let theirKey = try await harness.call(.post, "/v1/admin/backend-keys", credential: theirs, json: ["name": "theirs"])
            let theirID = try #require((theirKey["key"] as? [String: Any])?["keyId"] as? String)
            #expect(try await harness.call(.delete, "/v1/admin/backend-keys/\(theirID)", credential: mine).status == .notFound)
            #expect(try await harness.call(.delete, "/v1/admin/backend-keys/not-a-uuid", credential: mine).status == .notFound)
            let listedByThem = try #require(try await harness.call(.get, "/v1/admin/backend-keys", credential: theirs)["keys"] as? [[String: Any]])
            #expect(listedByThem.first?["revokedAt"] == nil)
            let byOperator = try await harness.call(.post, "/v1/admin/backend-keys", credential: AdminHarness.operatorToken, json: ["name": "x"])
            #expect(byOperator.status == .forbidden)
        }
    }
}

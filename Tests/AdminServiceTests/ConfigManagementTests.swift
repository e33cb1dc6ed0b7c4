import Foundation
import HTTPTypes
import PostgresNIO
import SesameDomain
import SesameEncryption
import SesameStorage
import SesameTestSupport
import SesameVault
import Testing

@Suite("Admin: config upload, view, history, rollback, resolve, delete, audit", .timeLimit(.minutes(2)))
struct ConfigManagementTests {
    @Test("an invalid pattern is a 400 naming the rule; a non-object or oversized config is refused")
    func refusedUploads() async throws {
        try await AdminHarness.run(maxConfigBytes: 100) { harness in
            let key = try await harness.createKey()
            for pattern in ["2.x", "2.*.1", "", "1.2.3.4", "*.1", "-1.*", "v2"] {
                let reply = try await harness.upload(["a": 1], version: pattern, key: key)
                #expect(reply.status == .badRequest, "\(pattern)")
                #expect(reply.errorCode == "invalid_version_pattern")
                #expect(reply.errorMessage?.contains("*, N.*, N.N.* or N.N.N") == true)
            }
            #expect(try await harness.upload([1, 2], version: "*", key: key).errorCode == "invalid_request")
            #expect(try await harness.upload("text", version: "*", key: key).errorCode == "invalid_request")
            let large = try await harness.upload(["big": String(repeating: "x", count: 200)], version: "*", key: key)
            #expect(large.status == .contentTooLarge)
            #expect(large.errorCode == "config_too_large")
            let missing = try await harness.call(.post, "/v1/admin/config/upload", credential: key, json: ["config": ["a": 1]])
            #expect(missing.status == .badRequest)
        }
    }

    @Test("uploads are revisions: view, history, resolve by priority, rollback to an exact earlier body, delete")
    func lifecycle() async throws {
        try await AdminHarness.run { harness in
            let key = try await harness.createKey()
            let first = try await harness.upload(["api_keys": ["stripe": "sk_live_1"], "limit": 5, "ratio": 0.5], version: "*", key: key)
            #expect(first["revision"] as? Int == 1)
            #expect(first["allPatterns"] as? [String] == ["*"])
            #expect(try await harness.upload(["api_keys": ["stripe": "sk_live_2"]], version: "*", key: key)["revision"] as? Int == 2)
            let v2 = try await harness.upload(["endpoint": "https://v2.example.com"], version: "02.*", key: key)
            #expect(v2["pattern"] as? String == "2.*")
            #expect(v2["totalPatterns"] as? Int == 2)

            let manifest = try await harness.call(.get, "/v1/admin/config", credential: key)
            let patterns = try #require(manifest["patterns"] as? [[String: Any]])
            #expect(patterns.map { $0["pattern"] as? String } == ["*", "2.*"])
            #expect(patterns.first?["revision"] as? Int == 2)
            #expect(patterns.first?["updatedBy"] as? String == "ci (sk_prod_…\(key.suffix(4)))")
            #expect((patterns.first?["updatedAt"] as? String)?.hasSuffix("Z") == true)

            for (version, pattern) in [("2.1.3", "2.*"), ("2", "2.*"), ("3.0.0", "*"), ("10.4", "*")] {
                let resolved = try await harness.call(.get, "/v1/admin/config/resolve?version=\(version)", credential: key)
                #expect(resolved["matchedPattern"] as? String == pattern, "\(version)")
            }
            #expect(try await harness.call(.get, "/v1/admin/config/resolve?version=2.x", credential: key).status == .badRequest)
            #expect(try await harness.upload(["hotfix": true], version: "2.1.3", key: key).status == .ok)
            #expect(try await harness.call(.get, "/v1/admin/config/resolve?version=2.1.3", credential: key)["matchedPattern"] as? String == "2.1.3")

            // Rollback: revision 1's exact stored bytes come back as revision 4 of '*'.
            let rollback = try await harness.call(.post, "/v1/admin/config/rollback", credential: key, json: ["version": "*", "revision": 1])
            #expect(rollback["revision"] as? Int == 3)
            #expect(try await storedBody(harness, pattern: "*", revision: 3) == storedBody(harness, pattern: "*", revision: 1))
            #expect(try await storedBody(harness, pattern: "*", revision: 3) != storedBody(harness, pattern: "*", revision: 2))
            let body = try await storedBody(harness, pattern: "*", revision: 3)
            #expect(String(decoding: body, as: UTF8.self) == #"{"api_keys":{"stripe":"sk_live_1"},"limit":5,"ratio":0.5}"#)
            let unknownRevision = try await harness.call(.post, "/v1/admin/config/rollback", credential: key, json: ["version": "*", "revision": 99])
            #expect(unknownRevision.errorCode == "revision_not_found")

            let history = try await harness.call(.get, "/v1/admin/config/history?version=*", credential: key)
            let revisions = try #require(history["revisions"] as? [[String: Any]])
            #expect(revisions.map { $0["revision"] as? Int } == [3, 2, 1])
            #expect(revisions.first?["action"] as? String == "rollback")
            #expect(revisions.first?["restoredFrom"] as? Int == 1)
            #expect(revisions.first?["sha256"] as? String == revisions.last?["sha256"] as? String)

            // Delete one pattern, then everything; history survives.
            let deleteOne = try await harness.call(.delete, "/v1/admin/config?version=2.*", credential: key)
            #expect(deleteOne["deleted"] as? [String] == ["2.*"])
            #expect(try await harness.call(.delete, "/v1/admin/config?version=7.*", credential: key).errorCode == "pattern_not_found")
            let deleteAll = try await harness.call(.delete, "/v1/admin/config", credential: key)
            #expect(deleteAll["deleted"] as? [String] == ["*", "2.1.3"])
            #expect((deleteAll["message"] as? String)?.contains("every pattern") == true)
            #expect(try await harness.call(.get, "/v1/admin/config/resolve?version=3.0.0", credential: key).errorCode == "no_matching_config")
            #expect((try await harness.call(.get, "/v1/admin/config/history", credential: key)["revisions"] as? [Any])?.count == 8)

            // Every mutation is audited with the key's id (never the key), and each transaction that
            // changed what the app serves (its creation, four uploads, the rollback, two deletes)
            // announced once in the outbox.
            let audit = try await harness.call(.get, "/v1/admin/audit?limit=100", credential: key)
            let entries = try #require(audit["entries"] as? [[String: Any]])
            #expect(entries.compactMap { $0["action"] as? String } == [
                "key.create", "config.upload", "config.upload", "config.upload", "config.upload", "config.rollback", "config.delete",
                "config.delete", "config.delete",
            ])
            #expect(entries.dropFirst().allSatisfy { ($0["actor"] as? String)?.hasPrefix("key:") == true })
            let page = try await harness.call(.get, "/v1/admin/audit?limit=2&after=0", credential: key)
            #expect(page["next"] as? Int != nil)
            let events = try await harness.database.query(
                "SELECT count(*) FROM outbox WHERE topic = 'sesame.config.published' AND event_key = \(AdminHarness.appID)")
            for try await count in events.decode(Int.self) { #expect(count == 8) }
        }
    }

    @Test("a zero-knowledge envelope is stored as ciphertext and flagged; a broken one is refused")
    func zeroKnowledgeUpload() async throws {
        try await AdminHarness.run { harness in
            let key = try await harness.createKey()
            let envelope = try VaultEnvelope.seal(
                Data(#"{"api_keys":{"stripe":"sk_live_zk"}}"#.utf8), password: "vault", cost: .init(n: 1 << 10, r: 8, p: 1))
            let json = try JSONSerialization.jsonObject(with: try envelope.encoded())
            let reply = try await harness.upload(json, version: "*", key: key)
            #expect(reply.status == .ok)
            #expect((reply["message"] as? String)?.contains("zero-knowledge") == true)
            let manifest = try await harness.call(.get, "/v1/admin/config", credential: key)
            #expect((manifest["patterns"] as? [[String: Any]])?.first?["zeroKnowledge"] as? Bool == true)
            let stored = try await storedBody(harness, pattern: "*", revision: 1)
            #expect(try VaultEnvelope.decode(stored) == envelope)
            #expect(!String(decoding: stored, as: UTF8.self).contains("sk_live_zk"))

            let broken = try await harness.upload(["sesameVault": 1, "cipher": "AES-256-GCM"], version: "*", key: key)
            #expect(broken.status == .badRequest)
            #expect(broken.errorMessage?.contains("sesame encrypt") == true)
        }
    }

    @Test("a config larger than the service-wide body limit is accepted up to SESAME_MAX_CONFIG_BYTES")
    func configLimitRaisesBodyLimit() async throws {
        try await AdminHarness.run(maxConfigBytes: 64 * 1024, maxBodyBytes: 1024) { harness in
            let key = try await harness.createKey()
            #expect(try await harness.upload(["blob": String(repeating: "x", count: 20_000)], version: "*", key: key).status == .ok)
            let tooLarge = try await harness.upload(["blob": String(repeating: "x", count: 70_000)], version: "*", key: key)
            #expect(tooLarge.status == .contentTooLarge)
        }
    }

    @Test("twenty concurrent uploads to one pattern get twenty distinct, increasing revisions")
    func concurrentUploads() async throws {
        try await AdminHarness.run(connections: .many) { harness in
            let key = try await harness.createKey()
            let revisions = try await withThrowingTaskGroup(of: Int?.self) { group in
                for index in 0..<20 {
                    group.addTask { try await harness.upload(["n": index], version: "1.*", key: key)["revision"] as? Int }
                }
                var collected: [Int] = []
                for try await revision in group { collected.append(try #require(revision)) }
                return collected
            }
            #expect(revisions.sorted() == Array(1...20))
        }
    }

    /// The plaintext of a stored revision, opened as delivery will open it.
    func storedBody(_ harness: AdminHarness, pattern: String, revision: Int) async throws -> [UInt8] {
        let rows = try await harness.database.query(
            "SELECT body FROM config_revisions WHERE app_id = \(AdminHarness.appID) AND pattern = \(pattern) AND revision = \(revision)")
        let encryption = EnvelopeEncryption(keyring: try MasterKeyring(current: AdminHarness.masterKey))
        for try await sealed in rows.decode(Data.self) {
            return try encryption.open(sealed, context: SealingContext.configBody(appID: AdminHarness.appID, pattern: pattern))
        }
        throw AdminHarness.Missing()
    }
}

extension AdminHarness {
    struct Missing: Error {}
}

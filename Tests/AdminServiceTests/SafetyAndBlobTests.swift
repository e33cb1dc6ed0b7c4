import Crypto
import Foundation
import HTTPTypes
import PostgresNIO
import SesameTestSupport
import Testing

@Suite("Admin: kill switch, emergency revoke, blobs", .timeLimit(.minutes(2)))
struct SafetyAndBlobTests {
    /// How many `app.changed` events the test app has in the outbox.
    func appChangedEvents(_ harness: AdminHarness) async throws -> Int {
        let rows = try await harness.database.query(
            "SELECT count(*) FROM outbox WHERE event_key = \(AdminHarness.appID) AND convert_from(payload, 'UTF8') LIKE '%\"app.changed\"%'")
        for try await count in rows.decode(Int.self) { return count }
        return 0
    }

    @Test("a kill switch needs a reason, lists what is off, turns back on, and is announced")
    func killSwitch() async throws {
        try await AdminHarness.run { harness in
            let key = try await harness.createKey()
            let noReason = try await harness.call(.post, "/v1/admin/kill-switch", credential: key, json: ["versions": ["2.1.3"], "enabled": false])
            #expect(noReason.status == .badRequest)
            #expect(noReason.errorMessage?.contains("reason") == true)
            #expect(
                try await harness.call(.post, "/v1/admin/kill-switch", credential: key, json: ["versions": ["2.1.x"], "enabled": false, "reason": "r"])
                    .errorCode == "invalid_version_pattern")
            // Text with a NUL cannot be stored in PostgreSQL: refused as a client error, not a 500
            // (schemathesis found it in a device revocation's reason), in a body and in a URL.
            let nul = try await harness.call(
                .post, "/v1/admin/kill-switch", credential: key, json: ["versions": ["2.1.3"], "enabled": false, "reason": "off\u{0}now"])
            #expect(nul.status == .badRequest)
            #expect(nul.errorCode == "invalid_request")
            #expect(try await harness.call(.post, "/v1/admin/devices/revoke", credential: key, json: ["keyId": String(repeating: "A", count: 43) + "=", "reason": "lost\u{0}"]).status == .badRequest)
            #expect(try await harness.call(.delete, "/v1/admin/debug-tokens/ci%00", credential: key).status == .badRequest)
            #expect((try await harness.call(.get, "/v1/admin/kill-switch", credential: key)["killed"] as? [Any])?.isEmpty == true)

            // Refused changes announce nothing; the two that change what is served announce once each.
            let announcedBefore = try await appChangedEvents(harness)
            let off = try await harness.call(
                .post, "/v1/admin/kill-switch", credential: key,
                json: ["versions": ["2.1.3", "1.*", "2.1.3"], "enabled": false, "reason": "Crashes on launch; update from the App Store."])
            #expect(off.status == .ok)
            #expect(off["versions"] as? [String] == ["2.1.3", "1.*"])
            let listed = try await harness.call(.get, "/v1/admin/kill-switch", credential: key)
            let killed = try #require(listed["killed"] as? [[String: Any]])
            #expect(killed.compactMap { $0["version"] as? String } == ["1.*", "2.1.3"])
            #expect(killed.first?["reason"] as? String == "Crashes on launch; update from the App Store.")

            let longReason = String(repeating: "r", count: 501)
            #expect(
                try await harness.call(.post, "/v1/admin/kill-switch", credential: key, json: ["versions": ["1.*"], "enabled": true, "reason": longReason])
                    .status == .badRequest)
            #expect(try await harness.call(.post, "/v1/admin/kill-switch", credential: key, json: ["versions": ["1.*"], "enabled": true]).status == .ok)
            let after = try await harness.call(.get, "/v1/admin/kill-switch", credential: key)
            #expect((after["killed"] as? [[String: Any]])?.compactMap { $0["version"] as? String } == ["2.1.3"])
            #expect(try await appChangedEvents(harness) == announcedBefore + 2)
        }
    }

    @Test("the resolve dry run decides as delivery does: a kill switch disables, a revocation's window adds a refresh hint")
    func resolveAppliesRules() async throws {
        try await AdminHarness.run { harness in
            let key = try await harness.createKey()
            #expect(try await harness.upload(["endpoint": "https://example.com"], version: "*", key: key).status == .ok)
            _ = try await harness.call(
                .post, "/v1/admin/kill-switch", credential: key, json: ["versions": ["2.1.*"], "enabled": false, "reason": "Please update."])
            let killed = try await harness.call(.get, "/v1/admin/config/resolve?version=2.1.3", credential: key)
            #expect(killed.status == .ok)
            #expect(killed["outcome"] as? String == "disabled")
            #expect(killed["reason"] as? String == "Please update.")
            #expect(killed["matchedPattern"] == nil)

            let served = try await harness.call(.get, "/v1/admin/config/resolve?version=2.2", credential: key)
            #expect(served["outcome"] as? String == "serve")
            #expect(served["matchedPattern"] as? String == "*")
            #expect(served["refreshAfter"] == nil)

            _ = try await harness.call(.post, "/v1/admin/emergency-revoke", credential: key, json: ["version": "2.*", "force_refresh_ttl": 300])
            let hinted = try await harness.call(.get, "/v1/admin/config/resolve?version=2.2", credential: key)
            #expect(hinted["outcome"] as? String == "serve")
            let refreshAfter = try #require(hinted["refreshAfter"] as? Int)
            #expect((1...300).contains(refreshAfter))
            #expect(try await harness.call(.get, "/v1/admin/config/resolve?version=3.0", credential: key)["refreshAfter"] == nil)
        }
    }

    @Test("an emergency revocation records the cut-off for auth and delivery, validates its input, and is announced")
    func emergencyRevoke() async throws {
        try await AdminHarness.run { harness in
            let key = try await harness.createKey()
            let announcedBefore = try await appChangedEvents(harness)
            let reply = try await harness.call(.post, "/v1/admin/emergency-revoke", credential: key, json: ["version": "2.*", "force_refresh_ttl": 300])
            #expect(reply.status == .ok)
            #expect(reply["versionPattern"] as? String == "2.*")
            let rows = try await harness.database.query(
                "SELECT version_pattern, force_refresh_ttl, issued_before <= now() FROM revocations WHERE app_id = \(AdminHarness.appID)")
            var stored: [(String, Int, Bool)] = []
            for try await row in rows.decode((String, Int, Bool).self) { stored.append(row) }
            #expect(stored.count == 1)
            #expect(stored.first?.0 == "2.*" && stored.first?.1 == 300 && stored.first?.2 == true)
            #expect(try await appChangedEvents(harness) == announcedBefore + 1)

            for body: [String: Any] in [["version": "two"], ["version": "*", "force_refresh_ttl": -1], ["version": "*", "force_refresh_ttl": 100_000]] {
                #expect(try await harness.call(.post, "/v1/admin/emergency-revoke", credential: key, json: body).status == .badRequest, "\(body)")
            }
        }
    }

    @Test("blobs: base64 upload and raw PUT store exact bytes with their digest; limits and keys are enforced; apps are separate")
    func blobs() async throws {
        try await AdminHarness.run(maxBlobBytes: 1 << 20) { harness in
            let key = try await harness.createKey()
            let small = Array("model weights".utf8)
            let json = try await harness.call(
                .post, "/v1/admin/blob/upload", credential: key,
                json: ["blob_key": "model.bin", "data_base64": Data(small).base64EncodedString(), "content_type": "application/octet-stream"])
            #expect(json.status == .ok)
            let large = (0..<(700 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            let put = try await harness.putBlob("images-v2.zip", bytes: large, contentType: "application/zip", credential: key)
            #expect(put.status == .ok, "\(String(decoding: put.body, as: UTF8.self))")
            #expect((put["blob"] as? [String: Any])?["sha256"] as? String == SHA256.hash(data: large).map { String(format: "%02x", $0) }.joined())

            // At rest the bytes are sealed chunks: nothing in clear, no run of the plaintext anywhere.
            let clear = try await harness.database.query("SELECT count(*) FROM blobs WHERE data IS NOT NULL")
            for try await count in clear.decode(Int.self) { #expect(count == 0) }
            let chunks = try await harness.database.query(
                "SELECT ciphertext FROM blob_chunks WHERE blob_key = 'images-v2.zip' ORDER BY chunk_index")
            var sealed: [Data] = []
            for try await chunk in chunks.decode(Data.self) { sealed.append(chunk) }
            #expect(sealed.count == 1 && sealed[0].count > large.count)
            #expect(sealed.allSatisfy { $0.range(of: Data(large[4096..<4160])) == nil })

            let tooLarge = try await harness.putBlob("huge.bin", bytes: Array(repeating: 1, count: (1 << 20) + 1), contentType: "application/octet-stream", credential: key)
            #expect(tooLarge.status == .contentTooLarge)
            for badKey in ["../etc", ".hidden", String(repeating: "k", count: 201)] {
                let reply = try await harness.call(
                    .post, "/v1/admin/blob/upload", credential: key, json: ["blob_key": badKey, "data_base64": "AAAA"])
                #expect(reply.status == .badRequest, "\(badKey)")
            }
            #expect(
                try await harness.call(.post, "/v1/admin/blob/upload", credential: key, json: ["blob_key": "x", "data_base64": "%%%"]).status
                    == .badRequest)
            // An empty upload (a PUT whose bytes were forgotten) would replace what apps download with nothing.
            #expect(
                try await harness.call(.post, "/v1/admin/blob/upload", credential: key, json: ["blob_key": "model.bin", "data_base64": ""]).status
                    == .badRequest)
            #expect(try await harness.putBlob("model.bin", bytes: [], contentType: "application/octet-stream", credential: key).status == .badRequest)

            let listed = try await harness.call(.get, "/v1/admin/blob", credential: key)
            #expect((listed["blobs"] as? [[String: Any]])?.compactMap { $0["blobKey"] as? String } == ["images-v2.zip", "model.bin"])
            let other = try await harness.createKey(teamID: "OTHERTEAM1", bundleID: "com.example.other")
            #expect((try await harness.call(.get, "/v1/admin/blob", credential: other)["blobs"] as? [Any])?.isEmpty == true)
        }
    }
}

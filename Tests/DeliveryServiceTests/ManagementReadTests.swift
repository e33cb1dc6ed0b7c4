import Foundation
import HTTPTypes
import SesameTestSupport
import Testing

/// What the management API shows and does beyond publishing: a revision's body and a diff of two,
/// the provisioning keys, and the attested devices, one of which it revokes everywhere at once.
@Suite("Management API: config body and diff, keys, devices", .timeLimit(.minutes(3)))
struct ManagementReadTests {
    @Test("a revision's body, the published one by default; a diff of two; a zero-knowledge diff is refused")
    func bodyAndDiff() async throws {
        try await DeliveryHarness.run { harness in
            _ = try await harness.upload(["api_keys": ["stripe": "sk_1"], "features": ["chat": true]], version: "2.*")
            _ = try await harness.uploadTiered(["api_keys": ["stripe": "sk_2"], "features": ["chat": true, "voice": false]], tiers: ["features": "unattested"], version: "2.*")

            let published = try await harness.manageReply(.get, "config/body?version=2.*", [:])
            #expect(published.status == .ok && published.json["revision"] as? Int == 2)
            #expect((published.json["config"] as? [String: Any])?["api_keys"] as? [String: String] == ["stripe": "sk_2"])
            #expect(published.json["tiers"] as? [String: String] == ["features": "unattested"])
            let first = try await harness.manageReply(.get, "config/body?version=2.*&revision=1", [:])
            #expect((first.json["config"] as? [String: Any])?["api_keys"] as? [String: String] == ["stripe": "sk_1"])
            #expect(try await harness.manageReply(.get, "config/body?version=2.*&revision=9", [:]).errorCode == "revision_not_found")
            #expect(try await harness.manageReply(.get, "config/body?version=3.*", [:]).errorCode == "pattern_not_found")
            #expect(try await harness.manageReply(.get, "config/body", [:]).errorCode == "invalid_request")

            let diff = try await harness.manageReply(.get, "config/diff?version=2.*&from=1&to=2", [:])
            let changes = try #require(diff.json["changes"] as? [[String: Any]])
            #expect(changes.map { $0["path"] as? [String] ?? [] } == [["api_keys", "stripe"], ["features", "voice"]])
            #expect(changes.map { $0["kind"] as? String } == ["changed", "added"])
            #expect(changes.first?["from"] as? String == "sk_1" && changes.first?["to"] as? String == "sk_2")
            #expect(diff.json["tiersChanged"] as? Bool == true)
            // Without `to`: against what is published now.
            #expect(try await harness.manageReply(.get, "config/diff?version=2.*&from=2", [:]).json["changes"] as? [Any] != nil)
            #expect((try await harness.manageReply(.get, "config/diff?version=2.*&from=2", [:]).json["changes"] as? [Any])?.isEmpty == true)

            let envelope: [String: Any] = [
                "sesameVault": 1, "kdf": ["name": "scrypt", "n": 1024, "r": 8, "p": 1, "salt": "AAAAAAAAAAAAAAAAAAAAAA=="],
                "cipher": "AES-256-GCM", "nonce": "AAAAAAAAAAAAAAAA", "ciphertext": "AAAAAAAAAAAAAAAAAAAAAAAA",
            ]
            _ = try await harness.upload(envelope, version: "2.*")
            let sealed = try await harness.manageReply(.get, "config/body?version=2.*", [:])
            #expect(sealed.json["zeroKnowledge"] as? Bool == true && (sealed.json["config"] as? [String: Any])?["ciphertext"] != nil)
            #expect(try await harness.manageReply(.get, "config/diff?version=2.*&from=2&to=3", [:]).errorCode == "invalid_request")
        }
    }

    @Test("keys are listed with name, hint and last use, never the key")
    func keys() async throws {
        try await DeliveryHarness.run { harness in
            let reply = try await harness.manageReply(.get, "keys", [:])
            let keys = try #require(reply.json["keys"] as? [[String: Any]])
            #expect(keys.count == 1 && keys[0]["hint"] as? String == "sk_prod_…" + harness.key.suffix(4))
            #expect(keys[0]["lastUsedAt"] is String && keys[0]["revokedAt"] == nil)
            #expect(!"\(reply.json)".contains(harness.key))
        }
    }

    @Test("devices are listed a page at a time; a revoked one is refused by every delivery instance at once and cannot refresh")
    func devices() async throws {
        try await DeliveryHarness.run { harness in
            let revision = try await harness.upload(["ok": true], version: "*")
            let victim = try await harness.app.attest(with: harness.auth, appVersion: "2.1.3")
            let other = try await harness.app.attest(with: harness.auth, appVersion: "2.1.4")
            _ = try await harness.app.attest(with: harness.auth)
            try await harness.waitUntilServed(version: "2.1.3", revision: revision, token: victim.accessToken)

            let firstPage = try await harness.manageReply(.get, "devices?limit=2", [:])
            let page = try #require(firstPage.json["devices"] as? [[String: Any]])
            #expect(page.count == 2 && page.allSatisfy { $0["tier"] as? String == "attested" && $0["environment"] as? String == "development" })
            let cursor = try #require(firstPage.json["next"] as? String)
            let rest = try #require(try await harness.manageReply(.get, "devices?limit=2&after=\(cursor)", [:]).json["devices"] as? [[String: Any]])
            #expect(rest.count == 1)
            let all = page + rest
            #expect(Set(all.compactMap { $0["keyId"] as? String }).count == 3)
            let victimDevice = try #require(all.first { $0["appVersion"] as? String == "2.1.3" })
            let victimKey = try #require(victimDevice["keyId"] as? String)
            #expect(victimDevice["counter"] as? Int == 0 && victimDevice["firstSeen"] is String && victimDevice["revokedAt"] == nil)

            #expect(try await harness.manageReply(.post, "devices/revoke", ["keyId": victimKey, "reason": ""]).errorCode == "invalid_request")
            #expect(try await harness.manageReply(.post, "devices/revoke", ["keyId": "nope", "reason": "x"]).errorCode == "invalid_request")
            let revoked = try await harness.manageReply(.post, "devices/revoke", ["keyId": victimKey, "reason": "stolen phone"])
            #expect(revoked.status == .ok, "\(revoked.json)")
            for instance in harness.deliveries.indices {
                try await eventually("delivery \(instance) refuses the revoked device") {
                    try await harness.fetch(version: "2.1.3", token: victim.accessToken, instance: instance).errorCode == "token_revoked"
                }
                #expect(try await harness.fetch(version: "2.1.4", token: other.accessToken, instance: instance).status == .ok)
            }
            let refresh = try await harness.post("/v1/auth/refresh", ["refreshToken": victim.refreshToken])
            #expect(refresh.errorCode == "token_revoked")
            #expect(try await harness.post("/v1/auth/refresh", ["refreshToken": other.refreshToken]).errorCode == "assertion_required")

            let listed = try #require(try await harness.manageReply(.get, "devices", [:]).json["devices"] as? [[String: Any]])
            let after = try #require(listed.first { $0["keyId"] as? String == victimKey })
            #expect(after["revokedAt"] is String && after["revokedReason"] as? String == "stolen phone")
            #expect(try await harness.manageReply(.post, "devices/revoke", ["keyId": victimKey, "reason": "again"]).errorCode == "device_not_found")
            let audit = try await harness.manage(.get, "audit?limit=100", [:])
            #expect((audit["entries"] as? [[String: Any]] ?? []).contains { $0["action"] as? String == "device.revoke" })
            // Another app's key sees none of these devices.
            let stranger = try await harness.createApp(bundleID: "com.example.stranger")
            let foreign = try await harness.manage(.get, "devices", [:], key: stranger.key)
            #expect((foreign["devices"] as? [Any])?.isEmpty == true)
        }
    }
}

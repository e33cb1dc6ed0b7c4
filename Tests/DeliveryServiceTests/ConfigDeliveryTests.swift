import Foundation
import HTTPTypes
import SesameTestSupport
import Testing

@Suite("Delivery: GET /v1/config", .timeLimit(.minutes(3)))
struct ConfigDeliveryTests {
    @Test("pattern precedence, no match, scope, ETag and 304, version validation, tokens")
    func matchingAndScope() async throws {
        try await DeliveryHarness.run { harness in
            let token = try await harness.app.attest(with: harness.auth, appVersion: "2.1.3").accessToken
            #expect(try await harness.fetch(version: "2.1.3", token: token).errorCode == "no_config")

            _ = try await harness.upload(["name": "default", "api_keys": ["stripe": "sk_1", "maps": "m_1"], "features": ["dark": true]], version: "*")
            _ = try await harness.upload(["name": "two"], version: "2.*")
            _ = try await harness.upload(["name": "two-one"], version: "2.1.*")
            let exact = try await harness.upload(["name": "exact"], version: "2.1.3")
            try await harness.waitUntilServed(version: "2.1.3", revision: exact, pattern: "2.1.3", token: token)

            for (version, expected, pattern) in [
                ("2.1.3", "exact", "2.1.3"), ("2.1.4", "two-one", "2.1.*"), ("2.1", "two-one", "2.1.*"), ("2.2.0", "two", "2.*"),
                ("2", "two", "2.*"), ("3.0.0", "default", "*"), ("10.0", "default", "*"),
            ] {
                let reply = try await harness.fetch(version: version, token: token)
                #expect(reply.status == .ok, "\(version)")
                #expect(reply.config?["name"] as? String == expected, "\(version)")
                #expect(reply.json["matchedPattern"] as? String == pattern, "\(version)")
                #expect(reply.json["requestedVersion"] as? String == version)
            }
            for bad in ["2.x", "", "1.2.3.4", "v2", "-1", "2..1"] {
                #expect(try await harness.fetch(version: bad, token: token).errorCode == "invalid_version", "\(bad)")
            }

            // Scope keeps only the listed dot paths; unknown ones are absent.
            let scoped = try await harness.fetch(version: "3.0.0", token: token, scope: "api_keys.stripe,features,nothing.here")
            #expect(scoped.config?["api_keys"] as? [String: String] == ["stripe": "sk_1"])
            #expect((scoped.config?["features"] as? [String: Bool]) == ["dark": true])
            #expect(scoped.config?["name"] == nil)
            #expect(scoped.config?.count == 2)

            // ETag: a revalidation gets 304 until the config changes.
            let first = try await harness.fetch(version: "3.0.0", token: token)
            let etag = try #require(first.headers[.eTag])
            #expect(try await harness.fetch(version: "3.0.0", token: token, ifNoneMatch: etag).status == .notModified)
            #expect(try await harness.fetch(version: "3.0.0", token: token, scope: "features", ifNoneMatch: etag).status == .ok)
            let next = try await harness.upload(["name": "default v2"], version: "*")
            try await harness.waitUntilServed(version: "3.0.0", revision: next, token: token)
            #expect(try await harness.fetch(version: "3.0.0", token: token, ifNoneMatch: etag).status == .ok)

            // Tokens: none, garbage and refresh tokens are refused.
            let tokens = try await harness.app.attest(with: harness.auth)
            #expect(try await harness.fetch(version: "3.0.0", token: nil).status == .unauthorized)
            #expect(try await harness.fetch(version: "3.0.0", token: "garbage").errorCode == "invalid_token")
            #expect(try await harness.fetch(version: "3.0.0", token: tokens.refreshToken).errorCode == "invalid_token")
            #expect(try await harness.fetch(version: "3.0.0", token: tokens.accessToken).status == .ok)
        }
    }

    @Test("zero-knowledge configs are served whole; scope is refused")
    func zeroKnowledge() async throws {
        try await DeliveryHarness.run { harness in
            let token = try await harness.app.attest(with: harness.auth).accessToken
            let envelope: [String: Any] = [
                "sesameVault": 1, "kdf": ["name": "scrypt", "n": 1024, "r": 8, "p": 1, "salt": "AAAAAAAAAAAAAAAAAAAAAA=="],
                "cipher": "AES-256-GCM", "nonce": "AAAAAAAAAAAAAAAA", "ciphertext": "AAAAAAAAAAAAAAAAAAAAAAAA",
            ]
            let revision = try await harness.upload(envelope, version: "*")
            try await harness.waitUntilServed(version: "1.0.0", revision: revision, token: token)
            let whole = try await harness.fetch(version: "1.0.0", token: token)
            #expect(whole.config?["ciphertext"] as? String == "AAAAAAAAAAAAAAAAAAAAAAAA")
            #expect(try await harness.fetch(version: "1.0.0", token: token, scope: "a").errorCode == "scope_unavailable_zero_knowledge")
        }
    }

    @Test("a kill switch answers 403 with the reason; an emergency revocation refuses older tokens, not newer ones, and asks for a refresh")
    func killSwitchAndRevocation() async throws {
        try await DeliveryHarness.run { harness in
            let revision = try await harness.upload(["ok": true], version: "*")
            let old = try await harness.app.attest(with: harness.auth, appVersion: "2.1.3").accessToken
            try await harness.waitUntilServed(version: "2.1.3", revision: revision, token: old)

            try await harness.manage(.post, "kill-switch", ["versions": ["2.1.3"], "enabled": false, "reason": "Update to 2.1.4 from the App Store."])
            for instance in harness.deliveries.indices {
                try await eventually("instance \(instance) refuses the killed version") {
                    try await harness.fetch(version: "2.1.3", token: old, instance: instance).errorCode == "version_disabled"
                }
            }
            #expect(try await harness.fetch(version: "2.1.3", token: old).errorMessage == "Update to 2.1.4 from the App Store.")
            #expect(try await harness.fetch(version: "2.1.4", token: old).status == .ok)
            try await harness.manage(.post, "kill-switch", ["versions": ["2.1.3"], "enabled": true])
            try await eventually("the version is back") { try await harness.fetch(version: "2.1.3", token: old).status == .ok }

            try await harness.manage(.post, "emergency-revoke", ["version": "2.*", "force_refresh_ttl": 300])
            for instance in harness.deliveries.indices {
                try await eventually("instance \(instance) refuses the old token") {
                    try await harness.fetch(version: "2.1.3", token: old, instance: instance).errorCode == "token_revoked"
                }
            }
            // Versions outside the pattern are unaffected, but a token issued to a 2.x build is revoked wherever it goes.
            #expect(try await harness.fetch(version: "2.0.0", token: old).errorCode == "token_revoked")
            let fresh = try await harness.app.attest(with: harness.auth, appVersion: "2.1.3").accessToken
            let reply = try await harness.fetch(version: "2.1.3", token: fresh)
            #expect(reply.status == .ok)
            let refreshAfter = try #require(reply.json["refreshAfter"] as? Int)
            #expect(refreshAfter > 250 && refreshAfter <= 300)
            #expect(reply.headers[.cacheControl] == "private, max-age=\(refreshAfter)")
            let other = try await harness.app.attest(with: harness.auth, appVersion: "3.0.0").accessToken
            #expect(try await harness.fetch(version: "3.0.0", token: other).headers[.cacheControl] == "private, no-cache")
        }
    }

    @Test("Kafka down: uploads succeed, cached configs are served, readiness is degraded; when it returns, both instances converge at once, not at the periodic resync")
    func kafkaOutage() async throws {
        let broker = try TansuBroker()
        defer { broker.stop() }
        // The resync would repair everything within its interval; an hour leaves only the event path.
        try await DeliveryHarness.run(kafkaBrokers: broker.brokers, resyncInterval: .seconds(3600)) { harness in
            let token = try await harness.app.attest(with: harness.auth).accessToken
            let first = try await harness.upload(["n": 1], version: "*")
            try await harness.waitUntilServed(version: "1.0.0", revision: first, token: token, timeout: .seconds(30))
            #expect(try await harness.readiness(instance: 0) == "ready")

            broker.stop()
            let second = try await harness.upload(["n": 2], version: "*")
            // Nothing new can arrive, and the cached config is still served.
            #expect(try await harness.fetch(version: "1.0.0", token: token).json["revision"] as? Int == first)
            for instance in harness.deliveries.indices {
                try await eventually(timeout: .seconds(20), "delivery \(instance) reports degraded") {
                    try await harness.readiness(instance: instance) == "degraded"
                }
            }

            // A restarted Tansu has no topics and starts offsets again at 0: the relay recreates the
            // topics and publishes what waited in the outbox, and the consumers find their way back.
            try broker.start()
            let started = ContinuousClock.now
            try await harness.waitUntilServed(version: "1.0.0", revision: second, token: token, timeout: .seconds(60))
            let third = try await harness.upload(["n": 3], version: "*")
            try await harness.waitUntilServed(version: "1.0.0", revision: third, token: token, timeout: .seconds(60))
            print("delivery converged \(ContinuousClock.now - started) after the broker came back")
            for instance in harness.deliveries.indices {
                try await eventually(timeout: .seconds(20), "delivery \(instance) ready again") {
                    try await harness.readiness(instance: instance) == "ready"
                }
            }
        }
    }

    @Test("propagation: each upload through admin reaches both delivery instances through the event bus, long before the 30 s resync")
    func propagation() async throws {
        try await DeliveryHarness.run { harness in
            let token = try await harness.app.attest(with: harness.auth).accessToken
            let warmup = try await harness.upload(["n": 0], version: "*")
            try await harness.waitUntilServed(version: "1.0.0", revision: warmup, token: token, timeout: .seconds(30))
            // The delivery instances run in this process: one registry, so both count here.
            func propagated() async throws -> (count: Double, sum: Double) {
                let text = try await harness.metrics()
                return (
                    MetricsText.value("sesame_delivery_propagation_seconds_count", in: text) ?? 0,
                    MetricsText.value("sesame_delivery_propagation_seconds_sum", in: text) ?? 0
                )
            }
            let before = try await propagated()
            // The 1-second target is measured by `./sesame-dev bench delivery` (p99 over 100
            // uploads); here, with every suite running at once on two cores, 5 s only proves the
            // event path carried each upload, since the resync would take up to 30 s.
            for round in 1...5 {
                let revision = try await harness.upload(["n": round], version: "*")
                try await harness.waitUntilServed(version: "1.0.0", revision: revision, token: token, timeout: .seconds(5))
            }
            // Each upload's event applied by each instance is one propagation measured, and each
            // took less than the 5 s the loop allowed it.
            try await eventually("both instances measured the five propagations") { try await propagated().count >= before.count + 10 }
            let after = try await propagated()
            #expect((after.sum - before.sum) / (after.count - before.count) < 5)
        }
    }
}

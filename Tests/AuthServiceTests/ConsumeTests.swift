import Foundation
import HTTPTypes
import HummingbirdTesting
import PostgresNIO
import SesameDomain
import SesameStorage
import SesameTestSupport
import Testing

/// Single-use API tokens: the app's backend redeems one exactly once, with a backend key.
@Suite("Auth: single-use API tokens consumed by the app's backend", .timeLimit(.minutes(2)))
struct ConsumeTests {
    static let policy = APITokenTests.policy
    static let audience = APITokenTests.audience

    /// A single-use token from a new attested install.
    static func limitedUseToken(_ harness: AuthHarness, limitedUse: Bool = true) async throws -> String {
        let (_, attested) = try await harness.attestNewKey(appVersion: "2.1.3")
        let access = try #require(attested["accessToken"])
        let reply = try await harness.post("/v1/auth/api-token", ["audience": audience, "limitedUse": limitedUse], bearer: access)
        #expect(reply.status == .ok, "\(reply.json)")
        #expect(reply.json["limitedUse"] as? Bool == limitedUse)
        return try #require(reply["token"])
    }

    @Test("the first consume answers the claims; a second is 409 already_consumed; the token says lu")
    func consumeOnce() async throws {
        try await AuthHarness.run(policy: Self.policy) { harness in
            let backendKey = try await harness.backendKey()
            let token = try await Self.limitedUseToken(harness)
            #expect(try AuthFlowTests.payload(token)["lu"] as? Bool == true)

            let first = try await harness.post("/v1/verify/consume", ["token": token, "audience": Self.audience], bearer: backendKey)
            #expect(first.status == .ok, "\(first.json)")
            #expect(first["app"] == AuthHarness.appID && first["aud"] == Self.audience && first["tier"] == "attested")
            #expect(first["jti"] == (try AuthFlowTests.payload(token)["jti"] as? String))

            let second = try await harness.post("/v1/verify/consume", ["token": token, "audience": Self.audience], bearer: backendKey)
            #expect(second.status == .conflict && second.errorCode == "already_consumed", "\(second.json)")
        }
    }

    @Test("the README's Python backend (standard library, no Sesame code) redeems a token once and is refused the replay")
    func pythonBackend() async throws {
        try await AuthHarness.run(policy: Self.policy) { harness in
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .appendingPathComponent("../../docs/backend/consume_api_token.py").standardizedFileURL.path
            // The key reaches the script in a file, as a secret should, not on its command line.
            let keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("backend-key-\(UUID().uuidString)")
            try Data(try await harness.backendKey().utf8).write(to: keyFile)
            defer { try? FileManager.default.removeItem(at: keyFile) }
            let token = try await Self.limitedUseToken(harness)
            let sesame = "http://127.0.0.1:\(try #require(harness.client.port))"

            let first = try await TestPython.runDetached(script, [token, sesame, Self.audience, keyFile.path])
            #expect(first.status == 0, "\(first.output)")
            let claims = try #require(try JSONSerialization.jsonObject(with: Data(first.output.utf8)) as? [String: Any])
            #expect(claims["app"] as? String == AuthHarness.appID && claims["aud"] as? String == Self.audience)
            let replay = try await TestPython.runDetached(script, [token, sesame, Self.audience, keyFile.path])
            #expect(replay.status == 1 && replay.output == "refused: already_consumed", "\(replay.output)")
            let otherAudience = try await TestPython.runDetached(script, [try await Self.limitedUseToken(harness), sesame, "https://payments.example.com", keyFile.path])
            #expect(otherAudience.status == 1 && otherAudience.output == "refused: audience_mismatch", "\(otherAudience.output)")
        }
    }

    @Test("eight consumes of one token at once over eight connections: exactly one wins")
    func parallelConsume() async throws {
        try await AuthHarness.run(policy: Self.policy, connections: .many) { harness in
            let backendKey = try await harness.backendKey()
            let token = try await Self.limitedUseToken(harness)
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for _ in 0..<8 {
                    group.addTask { try await harness.post("/v1/verify/consume", ["token": token, "audience": Self.audience], bearer: backendKey).status }
                }
                return try await group.reduce(into: [HTTPResponse.Status]()) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == .ok }.count == 1, "\(statuses)")
            #expect(statuses.filter { $0 == .conflict }.count == 7, "\(statuses)")
        }
    }

    @Test("refused: no key, a provisioning-style or unknown key, a revoked key, a plain token, another audience, a tampered or expired token")
    func refusals() async throws {
        try await AuthHarness.run(policy: Self.policy) { harness in
            let backendKey = try await harness.backendKey()
            let token = try await Self.limitedUseToken(harness)
            func consume(_ token: String, bearer: String?, audience: String? = Self.audience) async throws -> AuthHarness.Reply {
                var body: [String: Any] = ["token": token]
                if let audience { body["audience"] = audience }
                return try await harness.post("/v1/verify/consume", body, bearer: bearer)
            }

            #expect(try await consume(token, bearer: nil).errorCode == "invalid_backend_key")
            #expect(try await consume(token, bearer: "sk_prod_" + String(repeating: "A", count: 43)).errorCode == "invalid_backend_key")
            #expect(try await consume(token, bearer: "bk_prod_" + String(repeating: "A", count: 43)).errorCode == "invalid_backend_key")

            let plain = try await Self.limitedUseToken(harness, limitedUse: false)
            let notSingle = try await consume(plain, bearer: backendKey)
            #expect(notSingle.status == .unprocessableContent && notSingle.errorCode == "not_single_use")

            let otherAudience = try await consume(token, bearer: backendKey, audience: "https://payments.example.com")
            #expect(otherAudience.status == .forbidden && otherAudience.errorCode == "audience_mismatch")

            var parts = token.split(separator: ".").map(String.init)
            parts[1] = String(parts[1].dropLast()) + (parts[1].hasSuffix("A") ? "B" : "A")
            #expect(try await consume(parts.joined(separator: "."), bearer: backendKey).errorCode == "invalid_token")

            // An access token is no API token, even with a valid signature.
            let (_, attested) = try await harness.attestNewKey()
            #expect(try await consume(try #require(attested["accessToken"]), bearer: backendKey).errorCode == "invalid_token")

            // Refusals consumed nothing: the token still redeems once.
            #expect(try await consume(token, bearer: backendKey).status == .ok)

            // A revoked backend key is refused at once.
            let another = try await Self.limitedUseToken(harness)
            try await harness.withBackendKeys { store in
                let listed = try await store.list(appID: AuthHarness.appID)
                for key in listed { _ = try await store.revoke(keyID: key.keyId, appID: AuthHarness.appID, actor: "operator") }
            }
            #expect(try await consume(another, bearer: backendKey).errorCode == "invalid_backend_key")
        }
    }

    @Test("a valid backend key's 401s about the tokens it checks are verdicts, not failed credentials: 150 from one address are never 429; made-up keys still are")
    func verdictsAreNotFailedCredentials() async throws {
        try await AuthHarness.run(policy: Self.policy) { harness in
            let backendKey = try await harness.backendKey()
            let token = try await Self.limitedUseToken(harness)
            var parts = token.split(separator: ".").map(String.init)
            parts[1] = String(parts[1].dropLast()) + (parts[1].hasSuffix("A") ? "B" : "A")
            let tampered = parts.joined(separator: ".")
            // More than the address's budget of failures (100 by default): an app's users sending bad tokens.
            for attempt in 0..<150 {
                let reply = try await harness.post("/v1/verify/consume", ["token": tampered, "audience": Self.audience], bearer: backendKey)
                #expect(reply.status == .unauthorized && reply.errorCode == "invalid_token", "attempt \(attempt): \(reply.json)")
                if reply.status != .unauthorized { break }
            }
            #expect(try await harness.post("/v1/verify/consume", ["token": token, "audience": Self.audience], bearer: backendKey).status == .ok)
            // The caller's own made-up credential still spends the address's budget.
            var statuses: [Int] = []
            for _ in 0..<120 {
                let madeUp = "bk_prod_" + String((0..<43).map { _ in "abcdefghijklmnopqrstuvwxyz0123456789".randomElement()! })
                statuses.append(Int(try await harness.post("/v1/verify/consume", ["token": token], bearer: madeUp).status.code))
            }
            #expect(statuses.contains(429), "\(Set(statuses))")
        }
    }

    @Test("a key bound to an audience consumes only its tokens; an unbound key must name its audience when the policy lists several")
    func audienceBinding() async throws {
        try await AuthHarness.run(policy: Self.policy) { harness in
            let paymentsKey = try await harness.backendKey(audience: "https://payments.example.com")
            let unbound = try await harness.backendKey()
            let token = try await Self.limitedUseToken(harness)

            // Neither the key nor the request names an audience: which API is asking is unknown.
            let unnamed = try await harness.post("/v1/verify/consume", ["token": token], bearer: unbound)
            #expect(unnamed.status == .unprocessableContent && unnamed.errorCode == "audience_required", "\(unnamed.json)")
            // The payments backend cannot redeem a token sent to the main API, named or not.
            let otherBackend = try await harness.post("/v1/verify/consume", ["token": token], bearer: paymentsKey)
            #expect(otherBackend.status == .forbidden && otherBackend.errorCode == "audience_mismatch", "\(otherBackend.json)")
            // Neither refusal consumed it.
            #expect(try await count(harness) == 0)
            #expect(try await harness.post("/v1/verify/consume", ["token": token, "audience": Self.audience], bearer: unbound).status == .ok)

            // A key can only be bound to an audience the policy lists.
            await #expect(throws: BackendKeyStore.CreateRefusal.audienceNotListed) {
                try await harness.withBackendKeys { store in
                    _ = try await store.create(appID: AuthHarness.appID, name: "stray", audience: "https://elsewhere.example.com", actor: "operator")
                }
            }
            // With one audience in the policy, an unbound key needs no name.
            try await harness.setPolicy(AppPolicy(refreshRequiresAssertion: false, apiAudiences: [Self.audience]))
            let single = try await Self.limitedUseToken(harness)
            #expect(try await harness.post("/v1/verify/consume", ["token": single], bearer: unbound).status == .ok)
        }
    }

    @Test("a revocation made after the token was issued holds at consume: the install's key revoked, an emergency revocation, a kill switch")
    func gateAfterIssue() async throws {
        try await AuthHarness.run(policy: Self.policy) { harness in
            let backendKey = try await harness.backendKey(audience: Self.audience)
            func consume(_ token: String) async throws -> AuthHarness.Reply {
                try await harness.post("/v1/verify/consume", ["token": token], bearer: backendKey)
            }
            // Tokens for version 2.1.3 issued now, then switched off.
            let killed = try await Self.limitedUseToken(harness)
            let revoked = try await Self.limitedUseToken(harness)
            let deviceRevoked = try await Self.limitedUseToken(harness)

            try await harness.database.query(
                "INSERT INTO kill_switches (app_id, version, reason) VALUES (\(AuthHarness.appID), '2.1.3', 'Update from the App Store.')")
            let switchedOff = try await consume(killed)
            #expect(switchedOff.status == .forbidden && switchedOff.errorCode == "version_disabled", "\(switchedOff.json)")
            try await harness.database.query("DELETE FROM kill_switches")

            try await harness.database.query(
                "INSERT INTO revocations (app_id, version_pattern, issued_before) VALUES (\(AuthHarness.appID), '2.*', now())")
            let emergency = try await consume(revoked)
            #expect(emergency.status == .forbidden && emergency.errorCode == "token_revoked", "\(emergency.json)")
            try await harness.database.query("DELETE FROM revocations")

            let subject = try #require(try AuthFlowTests.payload(deviceRevoked)["sub"] as? String)
            try await harness.database.query("UPDATE attested_keys SET revoked_at = now() WHERE key_id = \(Data(try #require(Base64.decode(subject))))")
            let device = try await consume(deviceRevoked)
            #expect(device.status == .forbidden && device.errorCode == "device_revoked", "\(device.json)")

            // With nothing switched off, a fresh token of a live key passes.
            #expect(try await consume(try await Self.limitedUseToken(harness)).status == .ok)
        }
    }

    @Test("an install attested just after an emergency revocation, within the same second, passes at consume (its token's iat counts whole seconds)")
    func attestedJustAfterARevocation() async throws {
        try await AuthHarness.run(policy: Self.policy) { harness in
            let backendKey = try await harness.backendKey(audience: Self.audience)
            // Made a microsecond into this second: a token issued later in it says this second in its `iat`.
            try await harness.database.query(
                """
                INSERT INTO revocations (app_id, version_pattern, issued_before)
                VALUES (\(AuthHarness.appID), '2.*', date_trunc('second', clock_timestamp()) + interval '1 microsecond')
                """)
            let token = try await Self.limitedUseToken(harness)
            let reply = try await harness.post("/v1/verify/consume", ["token": token], bearer: backendKey)
            #expect(reply.status == .ok, "\(reply.json)")
        }
    }

    @Test("a backend key of another app is refused a token of this one (wrong_app)")
    func otherApp() async throws {
        try await AuthHarness.run(policy: Self.policy) { harness in
            let token = try await Self.limitedUseToken(harness)
            try await harness.database.query(
                """
                INSERT INTO apps (app_id, team_id, bundle_id, storage_id) VALUES ('OTHERTEAM1.com.example.other', 'OTHERTEAM1', 'com.example.other', '\\x00'::bytea)
                """)
            let otherKey = try await harness.backendKey(appID: "OTHERTEAM1.com.example.other")
            let reply = try await harness.post("/v1/verify/consume", ["token": token], bearer: otherKey)
            #expect(reply.status == .forbidden && reply.errorCode == "wrong_app", "\(reply.json)")
        }
    }

    @Test("consumed ids are kept until their token expires, then pruned")
    func pruning() async throws {
        try await AuthHarness.run(policy: Self.policy) { harness in
            let backendKey = try await harness.backendKey()
            let token = try await Self.limitedUseToken(harness)
            #expect(try await harness.post("/v1/verify/consume", ["token": token, "audience": Self.audience], bearer: backendKey).status == .ok)
            #expect(try await count(harness) == 1)
            // Not yet expired: kept.
            try await harness.withConsumedTokens { store in
                let pruned = try await store.pruneExpired()
                #expect(pruned == 0)
            }
            #expect(try await count(harness) == 1)
            // As if it had expired two minutes ago.
            try await harness.database.query("UPDATE consumed_api_tokens SET expires_at = now() - interval '2 minutes'")
            try await harness.withConsumedTokens { store in
                let pruned = try await store.pruneExpired()
                #expect(pruned == 1)
            }
            #expect(try await count(harness) == 0)
        }
    }

    func count(_ harness: AuthHarness) async throws -> Int {
        let rows = try await harness.database.query("SELECT count(*) FROM consumed_api_tokens")
        for try await count in rows.decode(Int.self) { return count }
        return -1
    }
}

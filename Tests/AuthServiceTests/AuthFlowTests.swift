import AppAttest
import AppAttestTesting
import Crypto
import Foundation
import HTTPTypes
import JWTKit
import Logging
import PostgresNIO
import SesameDomain
import SesameTokens
import SesameTestSupport
import Testing

/// The auth flows end to end over HTTP, with a software attester, against a real PostgreSQL.
@Suite("Auth flows", .timeLimit(.minutes(2)))
struct AuthFlowTests {
    /// Verifies `token` offline with the service's published JWKS, as delivery or a developer's backend would.
    static func verifyWithJWKS(_ harness: AuthHarness, _ token: String) async throws -> AccessTokenClaims {
        let (status, body) = try await harness.get("/.well-known/jwks.json")
        #expect(status == .ok)
        let keys = try await JWTKeyCollection().add(jwksJSON: String(decoding: body, as: UTF8.self))
        return try await keys.verify(token, as: AccessTokenClaims.self)
    }

    @Test("challenge → attest → refresh → refresh with an assertion; tokens verify with the JWKS")
    func fullFlow() async throws {
        try await AuthHarness.run { harness in
            let (key, attested) = try await harness.attestNewKey(appVersion: "2.1.3")
            #expect(attested.status == .ok)
            #expect(attested.json["expiresIn"] as? Int == 900)
            let claims = try await Self.verifyWithJWKS(harness, try #require(attested["accessToken"]))
            #expect(claims.subject.value == Base64.urlEncode(key.keyId))
            #expect(claims.appID == AuthHarness.appID)
            #expect(claims.environment == "development")
            #expect(claims.appVersion == "2.1.3")
            #expect(claims.expiration.value.timeIntervalSince(claims.issuedAt.value) == 900)

            let refreshed = try await harness.refresh(try #require(attested["refreshToken"]))
            #expect(refreshed.status == .ok)
            #expect(refreshed["accessToken"] != attested["accessToken"])
            _ = try await Self.verifyWithJWKS(harness, try #require(refreshed["accessToken"]))

            let bound = try await harness.refresh(
                try #require(refreshed["refreshToken"]), extra: try await harness.assertionFields(key, counter: 1))
            #expect(bound.status == .ok, "\(bound.json)")
            let counter = try await harness.database.query("SELECT counter FROM attested_keys")
            for try await value in counter.decode(Int64.self) { #expect(value == 1) }
        }
    }

    @Test("a production attestation is accepted and the token says so; a policy can refuse development keys")
    func environments() async throws {
        try await AuthHarness.run { harness in
            let (_, production) = try await harness.attestNewKey(environment: .production)
            #expect(production.status == .ok)
            #expect(try await Self.verifyWithJWKS(harness, try #require(production["accessToken"])).environment == "production")
        }
        try await AuthHarness.run(policy: AppPolicy(allowDevelopmentKeys: false)) { harness in
            let (_, development) = try await harness.attestNewKey(environment: .development)
            #expect(development.status == .forbidden)
            #expect(development.errorCode == "environment_not_allowed")
            let (_, production) = try await harness.attestNewKey(environment: .production)
            #expect(production.status == .ok)
        }
        // Left to the deployment, development keys are accepted in development, refused in production.
        #expect(AppPolicy().allowsDevelopmentKeys(inProduction: false))
        #expect(!AppPolicy().allowsDevelopmentKeys(inProduction: true))
        #expect(AppPolicy(allowDevelopmentKeys: true).allowsDevelopmentKeys(inProduction: true))
    }

    @Test("a development key's refresh is refused once the policy stops accepting development keys")
    func environmentRecheckedAtRefresh() async throws {
        try await AuthHarness.run { harness in
            let (_, development) = try await harness.attestNewKey(environment: .development)
            let (_, production) = try await harness.attestNewKey(environment: .production)
            try await harness.setPolicy(AppPolicy(allowDevelopmentKeys: false, refreshRequiresAssertion: false))
            #expect(try await harness.refresh(try #require(development["refreshToken"])).errorCode == "environment_not_allowed")
            #expect(try await harness.refresh(try #require(production["refreshToken"])).status == .ok)
        }
    }

    @Test("unknown, used and expired nonces are refused")
    func nonces() async throws {
        try await AuthHarness.run { harness in
            let key = harness.attester.generateKey()
            let unknown = try await harness.post(
                "/v1/auth/attest", try harness.attestBody(key, nonce: (0..<32).map { _ in UInt8.random(in: 0...255) }))
            #expect(unknown.errorCode == "invalid_challenge")
            #expect(unknown.status == .unauthorized)

            let nonce = try await harness.challenge()
            #expect(try await harness.post("/v1/auth/attest", try harness.attestBody(key, nonce: nonce)).status == .ok)
            let other = harness.attester.generateKey()
            #expect(try await harness.post("/v1/auth/attest", try harness.attestBody(other, nonce: nonce)).errorCode == "invalid_challenge")

            let expiring = try await harness.challenge()
            try await harness.database.query("UPDATE challenges SET expires_at = now() - interval '1 second'")
            #expect(try await harness.post("/v1/auth/attest", try harness.attestBody(other, nonce: expiring)).errorCode == "invalid_challenge")
        }
    }

    @Test("one nonce sent 50 times in parallel: exactly one attestation succeeds")
    func parallelNonce() async throws {
        try await AuthHarness.run(connections: .many) { harness in
            let nonce = try await harness.challenge()
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<50 {
                    let body = try harness.attestBody(harness.attester.generateKey(), nonce: nonce)
                    group.addTask { Int(try await harness.post("/v1/auth/attest", body, from: "10.0.0.\(index)").status.code) }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == 200 }.count == 1)
            #expect(statuses.filter { $0 == 401 }.count == 49)
        }
    }

    @Test("an unknown app, another app's attestation and a re-attested key are refused")
    func attestationRefusals() async throws {
        try await AuthHarness.run { harness in
            var body = try harness.attestBody(harness.attester.generateKey(), nonce: try await harness.challenge())
            body["bundleId"] = "com.example.other"
            let unknown = try await harness.post("/v1/auth/attest", body)
            #expect(unknown.status == .notFound)
            #expect(unknown.errorCode == "unknown_app")

            let key = harness.attester.generateKey()
            let wrongApp = try await harness.post(
                "/v1/auth/attest",
                try harness.attestBody(key, nonce: try await harness.challenge()) {
                    $0.rpIdHash = Array(SHA256.hash(data: Array("TEAMID1234.com.example.other".utf8)))
                })
            #expect(wrongApp.status == .unauthorized)
            #expect(wrongApp.errorCode == "attestation_invalid")
            #expect((wrongApp.json["error"] as? [String: Any])?["message"] as? String == "The App Attest attestation was refused at step 'rpIdHash'.")

            #expect(try await harness.post("/v1/auth/attest", try harness.attestBody(key, nonce: try await harness.challenge())).status == .ok)
            let again = try await harness.post("/v1/auth/attest", try harness.attestBody(key, nonce: try await harness.challenge()))
            #expect(again.status == .conflict)
            #expect(again.errorCode == "key_already_attested")
        }
    }

    @Test("a reused refresh token revokes its whole family")
    func refreshReuse() async throws {
        try await AuthHarness.run { harness in
            let (_, attested) = try await harness.attestNewKey()
            let first = try #require(attested["refreshToken"])
            let second = try #require(try await harness.refresh(first)["refreshToken"])
            let reused = try await harness.refresh(first)
            #expect(reused.status == .unauthorized)
            #expect(reused.errorCode == "refresh_token_reused")
            // The thief's replay also cut off the legitimate holder: the family is gone.
            #expect(try await harness.refresh(second).errorCode == "token_revoked")
        }
    }

    @Test("one refresh token sent 8 times at once: exactly one refresh succeeds, the others are told of the reuse, and the family is gone")
    func parallelRefresh() async throws {
        try await AuthHarness.run(connections: .many) { harness in
            let (_, attested) = try await harness.attestNewKey()
            let token = try #require(attested["refreshToken"])
            // Eight, one per connection the client opens (the per-key refresh limit lets ten through),
            // held at the family's row until all of them are there, so none comes after the
            // winner's commit: the case of a thief racing the app, which must still be caught.
            let replies = try await withThrowingTaskGroup(of: AuthHarness.Reply.self) { group in
                try await harness.database.withTransaction(logger: Logger(label: "test")) { connection in
                    try await connection.query("SELECT 1 FROM refresh_token_families FOR UPDATE", logger: Logger(label: "test"))
                    for _ in 0..<8 { group.addTask { try await harness.refresh(token) } }
                    try await Task.sleep(for: .seconds(2))
                }
                return try await group.reduce(into: [AuthHarness.Reply]()) { $0.append($1) }
            }
            let winners = replies.filter { $0.status == .ok }
            #expect(winners.count == 1)
            // Each loser is told of the reuse, or, once a reuse revoked the family, that it is revoked.
            let losers = replies.filter { $0.status != .ok }
            #expect(losers.allSatisfy { $0.errorCode == "refresh_token_reused" || $0.errorCode == "token_revoked" }, "\(losers.map(\.errorCode))")
            #expect(losers.contains { $0.errorCode == "refresh_token_reused" }, "\(losers.map(\.errorCode))")
            // The reuse revoked the family, the winner's new refresh token with it (asked of the
            // database: the key's refresh limit is spent).
            let revoked = try await harness.database.query("SELECT revoked_reason FROM refresh_token_families")
            for try await reason in revoked.decode(String?.self) { #expect(reason == "refresh token reused") }
        }
    }

    @Test("with refreshRequiresAssertion, a bare refresh is refused; a replayed assertion counter is refused")
    func assertionBoundRefresh() async throws {
        try await AuthHarness.run(policy: AppPolicy()) { harness in
            let (key, attested) = try await harness.attestNewKey()
            let token = try #require(attested["refreshToken"])
            let bare = try await harness.refresh(token)
            #expect(bare.status == .unauthorized)
            #expect(bare.errorCode == "assertion_required")

            let next = try await harness.refresh(token, extra: try await harness.assertionFields(key, counter: 5))
            #expect(next.status == .ok)
            let replayed = try await harness.refresh(
                try #require(next["refreshToken"]), extra: try await harness.assertionFields(key, counter: 5))
            #expect(replayed.errorCode == "assertion_invalid")

            let otherKey = harness.attester.generateKey()
            let forged = try await harness.refresh(
                try #require(next["refreshToken"]), extra: try await harness.assertionFields(otherKey, counter: 9))
            #expect(forged.errorCode == "assertion_invalid")
            // Refusals did not spend the refresh token.
            let latest = try await harness.refresh(try #require(next["refreshToken"]), extra: try await harness.assertionFields(key, counter: 6))
            #expect(latest.status == .ok)

            // A spent token comes back without an assertion (a thief has no device key): the family
            // is revoked all the same, not merely refused for the missing assertion.
            let stolen = try await harness.refresh(token)
            #expect(stolen.errorCode == "refresh_token_reused")
            #expect(
                try await harness.refresh(try #require(latest["refreshToken"]), extra: try await harness.assertionFields(key, counter: 7))
                    .errorCode == "token_revoked")
        }
    }

    @Test("a revoked attested key and an emergency revocation make refresh fail with token_revoked")
    func revocations() async throws {
        try await AuthHarness.run { harness in
            let (_, revokedKey) = try await harness.attestNewKey()
            try await harness.database.query("UPDATE attested_keys SET revoked_at = now()")
            #expect(try await harness.refresh(try #require(revokedKey["refreshToken"])).errorCode == "token_revoked")

            let (_, old) = try await harness.attestNewKey(appVersion: "2.1.3")
            let (_, unaffected) = try await harness.attestNewKey(appVersion: "3.0.0")
            try await harness.database.query(
                "INSERT INTO revocations (app_id, version_pattern, issued_before) VALUES (\(AuthHarness.appID), '2.*', now())")
            // Claiming another version does not escape the revocation of the token's own.
            #expect(try await harness.refresh(try #require(old["refreshToken"]), extra: ["appVersion": "3.0.0"]).errorCode == "token_revoked")
            #expect(try await harness.refresh(try #require(old["refreshToken"])).errorCode == "token_revoked")
            #expect(try await harness.refresh(try #require(unaffected["refreshToken"])).status == .ok)
            // Attesting again after the revocation gives tokens that refresh.
            let (_, fresh) = try await harness.attestNewKey(appVersion: "2.1.3")
            #expect(try await harness.refresh(try #require(fresh["refreshToken"])).status == .ok)
        }
    }

    @Test("emergency revocation of *: an overflowing version is refused, a token without a version is covered")
    func revocationEscapes() async throws {
        try await AuthHarness.run { harness in
            let (_, versioned) = try await harness.attestNewKey(appVersion: "2.1.3")
            let (_, versionless) = try await harness.attestNewKey()
            try await harness.database.query(
                "INSERT INTO revocations (app_id, version_pattern, issued_before) VALUES (\(AuthHarness.appID), '*', now())")
            let overflow = try await harness.refresh(try #require(versioned["refreshToken"]), extra: ["appVersion": "99999999999999999999"])
            #expect(overflow.status == .badRequest)
            #expect(overflow.errorCode == "invalid_request")
            #expect(try await harness.refresh(try #require(versioned["refreshToken"]), extra: ["appVersion": "1234567890.0"]).status == .badRequest)
            #expect(try await harness.refresh(try #require(versioned["refreshToken"]), extra: ["appVersion": "7.0"]).errorCode == "token_revoked")
            #expect(try await harness.refresh(try #require(versionless["refreshToken"])).errorCode == "token_revoked")
            // Attest refuses the overflowing version too.
            #expect(try await harness.attestNewKey(appVersion: "99999999999999999999").1.status == .badRequest)
        }
    }

    /// What a third party's generic verifier checks: signature, `exp` and `aud`, nothing Sesame-specific.
    struct GenericPayload: JWTPayload {
        var exp: ExpirationClaim
        var aud: AudienceClaim
        func verify(using algorithm: some JWTAlgorithm) async throws {
            try exp.verifyNotExpired()
            try aud.verifyIntendedAudience(includes: "sesame-api")
        }
    }

    /// The decoded JOSE header of `token`.
    static func header(_ token: String) throws -> [String: Any] { try part(0, of: token) }

    /// The decoded payload of `token`, unverified.
    static func payload(_ token: String) throws -> [String: Any] { try part(1, of: token) }

    private static func part(_ index: Int, of token: String) throws -> [String: Any] {
        let parts = token.split(separator: ".")
        let part = try #require(parts.count > index ? Base64.decode(String(parts[index])) : nil)
        return try #require(try JSONSerialization.jsonObject(with: Data(part)) as? [String: Any])
    }

    @Test("access and refresh tokens differ in header typ and aud, so a generic verifier cannot take one for the other")
    func tokenTypes() async throws {
        try await AuthHarness.run { harness in
            let (_, attested) = try await harness.attestNewKey()
            let access = try #require(attested["accessToken"])
            let refresh = try #require(attested["refreshToken"])
            #expect(try Self.header(access)["typ"] as? String == "at+jwt")
            #expect(try Self.header(refresh)["typ"] as? String == "refresh+jwt")
            let (_, body) = try await harness.get("/.well-known/jwks.json")
            let keys = try await JWTKeyCollection().add(jwksJSON: String(decoding: body, as: UTF8.self))
            _ = try await keys.verify(access, as: GenericPayload.self)
            await #expect(throws: (any Error).self) { try await keys.verify(refresh, as: GenericPayload.self) }
        }
    }

    @Test("every token pair issued is counted by tier and app")
    func issuedTokensCounted() async throws {
        try await AuthHarness.run { harness in
            func issued() async throws -> Double {
                let (_, body) = try await harness.get("/metrics")
                let line = String(decoding: body, as: UTF8.self).split(separator: "\n").first {
                    $0.hasPrefix("sesame_auth_tokens_issued_total") && $0.contains(#"tier="attested""#) && $0.contains(AuthHarness.appID)
                }
                return line.flatMap { $0.split(separator: " ").last }.flatMap { Double($0) } ?? 0
            }
            let before = try await issued()
            let (_, attested) = try await harness.attestNewKey()
            #expect(try await harness.refresh(try #require(attested["refreshToken"])).status == .ok)
            // At least these two (other tests of this app may run at the same time).
            #expect(try await issued() >= before + 2)
        }
    }

    @Test("every attestation auth judges is counted by app and result: accepted, the step of Apple's validation that refused it, a reused key")
    func attestationsCounted() async throws {
        try await AuthHarness.run { harness in
            func counted(_ result: String) async throws -> Double {
                let (_, body) = try await harness.get("/metrics")
                let line = String(decoding: body, as: UTF8.self).split(separator: "\n").first {
                    $0.hasPrefix("sesame_auth_attestations_total") && $0.contains(#"result="\#(result)""#) && $0.contains(AuthHarness.appID)
                }
                return line.flatMap { $0.split(separator: " ").last }.flatMap { Double($0) } ?? 0
            }
            let before = (accepted: try await counted("accepted"), nonce: try await counted("nonce"), reused: try await counted("key_reused"))
            let (key, accepted) = try await harness.attestNewKey()
            #expect(accepted.status == .ok)
            // The same key once more, over a new challenge: a reused key.
            #expect(try await harness.post("/v1/auth/attest", try harness.attestBody(key, nonce: try await harness.challenge())).status != .ok)
            // An attestation made over one challenge, sent with another: Apple's nonce step refuses it.
            var mismatched = try harness.attestBody(harness.attester.generateKey(), nonce: try await harness.challenge())
            mismatched["nonce"] = Data(try await harness.challenge()).base64EncodedString()
            let refused = try await harness.post("/v1/auth/attest", mismatched)
            #expect(refused.errorCode == "attestation_invalid", "\(refused.json)")
            // At least these (other tests of this app may run at the same time).
            #expect(try await counted("accepted") >= before.accepted + 1)
            #expect(try await counted("key_reused") >= before.reused + 1)
            #expect(try await counted("nonce") >= before.nonce + 1)
        }
    }

    @Test("an access token is not a refresh token, and garbage is not a token")
    func tokenConfusion() async throws {
        try await AuthHarness.run { harness in
            let (_, attested) = try await harness.attestNewKey()
            #expect(try await harness.refresh(try #require(attested["accessToken"])).errorCode == "invalid_token")
            #expect(try await harness.refresh("eyJhbGciOiJub25lIn0.e30.").errorCode == "invalid_token")
            #expect(try await harness.refresh(String(repeating: "a", count: 10_000)).errorCode == "invalid_token")
        }
    }
}

import AppAttestTesting
import Crypto
import Foundation
import HTTPTypes
import HummingbirdTesting
import JWTKit
import PostgresNIO
import SesameDomain
import SesameTestSupport
import SesameTokens
import Testing

/// Tokens for the app's own API: what a backend verifies offline with the JWKS and a JWT library.
@Suite("Auth: API tokens for the app's own API", .timeLimit(.minutes(2)))
struct APITokenTests {
    static let audience = "https://api.example.com"
    static let policy = AppPolicy(refreshRequiresAssertion: false, apiAudiences: [audience, "https://payments.example.com"])

    /// What a backend's own verifier reads, written without Sesame's claim types: the signature with
    /// the JWKS, `exp`, `aud` and the payload `typ`.
    struct BackendPayload: JWTPayload {
        var sub: SubjectClaim
        var app: String
        var tier: String
        var aud: AudienceClaim
        var exp: ExpirationClaim
        var iat: IssuedAtClaim
        var jti: IDClaim
        var typ: String
        var bnd: String?
        func verify(using algorithm: some JWTAlgorithm) async throws {
            try exp.verifyNotExpired()
            try aud.verifyIntendedAudience(includes: APITokenTests.audience)
            guard typ == "api" else { throw JWTError.claimVerificationFailure(failedClaim: nil, reason: "not an API token") }
        }
    }

    static func backendKeys(_ harness: AuthHarness) async throws -> JWTKeyCollection {
        let (_, body) = try await harness.get("/.well-known/jwks.json")
        return try await JWTKeyCollection().add(jwksJSON: String(decoding: body, as: UTF8.self))
    }

    @Test("an attested install gets a token for a listed audience, bound when asked, that a backend verifies with the JWKS")
    func issueAndVerify() async throws {
        try await AuthHarness.run(policy: Self.policy) { harness in
            let (key, attested) = try await harness.attestNewKey(appVersion: "2.1.3")
            let access = try #require(attested["accessToken"])
            let session = Array("the app's own session token".utf8)
            let binding = Base64.urlEncode(SHA256.hash(data: session))
            let reply = try await harness.post("/v1/auth/api-token", ["audience": Self.audience, "binding": binding], bearer: access)
            #expect(reply.status == .ok, "\(reply.json)")
            #expect(reply.json["expiresIn"] as? Int == 300)
            #expect(reply["audience"] == Self.audience)
            let token = try #require(reply["token"])
            #expect(try AuthFlowTests.header(token)["typ"] as? String == "app-api+jwt")

            let claims = try await Self.backendKeys(harness).verify(token, as: BackendPayload.self)
            #expect(claims.sub.value == Base64.urlEncode(key.keyId))
            #expect(claims.app == AuthHarness.appID)
            #expect(claims.tier == "attested")
            #expect(claims.aud.value == [Self.audience])
            #expect(claims.exp.value.timeIntervalSince(claims.iat.value) == 300)
            #expect(claims.bnd == binding)
            // An API token's NumericDates are whole seconds: the backends' strict verifiers refuse fractions.
            let payload = try AuthFlowTests.payload(token)
            for claim in ["iat", "exp"] {
                let value = try #require(payload[claim] as? NSNumber, "\(claim) missing")
                #expect(value.doubleValue == value.doubleValue.rounded(.down), "\(claim) is \(value)")
            }

            // Each token is its own: a new jti every time.
            let again = try await harness.post("/v1/auth/api-token", ["audience": Self.audience], bearer: access)
            let second = try await Self.backendKeys(harness).verify(try #require(again["token"]), as: BackendPayload.self)
            #expect(second.jti.value != claims.jti.value)
            #expect(second.bnd == nil)
        }
    }

    @Test("the README's Python backend (PyJWT, no Sesame code) accepts the token and refuses another audience, app, binding or an access token")
    func pythonBackend() async throws {
        try await AuthHarness.run(policy: Self.policy) { harness in
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .appendingPathComponent("../../docs/backend/verify_api_token.py").standardizedFileURL.path
            let (key, attested) = try await harness.attestNewKey()
            let access = try #require(attested["accessToken"])
            let binding = Base64.urlEncode(SHA256.hash(data: Array("session-42".utf8)))
            let token = try #require(
                try await harness.post("/v1/auth/api-token", ["audience": Self.audience, "binding": binding], bearer: access)["token"])
            let jwks = "http://127.0.0.1:\(try #require(harness.client.port))/.well-known/jwks.json"

            let accepted = try await TestPython.runDetached(script, [token, jwks, Self.audience, AuthHarness.appID, "session-42"])
            #expect(accepted.status == 0, "\(accepted.output)")
            let claims = try #require(try JSONSerialization.jsonObject(with: Data(accepted.output.utf8)) as? [String: Any])
            #expect(claims["sub"] as? String == Base64.urlEncode(key.keyId))

            for (arguments, reason) in [
                ([token, jwks, "https://payments.example.com", AuthHarness.appID], "Audience"),
                ([token, jwks, Self.audience, "OTHERTEAM1.com.example.app"], "another app"),
                ([token, jwks, Self.audience, AuthHarness.appID, "session-43"], "another value"),
                ([access, jwks, Self.audience, AuthHarness.appID], "header typ"),
            ] {
                let refused = try await TestPython.runDetached(script, arguments)
                #expect(refused.status == 1 && refused.output.contains(reason), "\(refused.output)")
            }
        }
    }

    @Test("an API token is no access token and an access token no API token, to Sesame and to a backend")
    func noConfusion() async throws {
        try await AuthHarness.run(policy: Self.policy) { harness in
            let (_, attested) = try await harness.attestNewKey()
            let access = try #require(attested["accessToken"])
            let apiToken = try #require(try await harness.post("/v1/auth/api-token", ["audience": Self.audience], bearer: access)["token"])
            // A backend expecting an API token refuses an access token (aud, typ).
            let keys = try await Self.backendKeys(harness)
            await #expect(throws: (any Error).self) { try await keys.verify(access, as: BackendPayload.self) }
            // Delivery's verifier refuses the API token as an access token; auth refuses it as a bearer.
            await #expect(throws: (any Error).self) { try await keys.verify(apiToken, as: AccessTokenClaims.self) }
            #expect(try await harness.post("/v1/auth/api-token", ["audience": Self.audience], bearer: apiToken).errorCode == "invalid_token")
            let refreshToken = try #require(attested["refreshToken"])
            #expect(try await harness.post("/v1/auth/api-token", ["audience": Self.audience], bearer: refreshToken).errorCode == "invalid_token")
            #expect(try await harness.post("/v1/auth/api-token", ["audience": Self.audience]).errorCode == "invalid_token")
        }
    }

    @Test("refused: an audience the policy does not list, none named among several, a malformed binding")
    func audiencesAndBindings() async throws {
        try await AuthHarness.run(policy: Self.policy) { harness in
            let access = try #require(try await harness.attestNewKey().1["accessToken"])
            let unlisted = try await harness.post("/v1/auth/api-token", ["audience": "https://evil.example.com"], bearer: access)
            #expect(unlisted.status == .forbidden)
            #expect(unlisted.errorCode == "audience_not_allowed")
            #expect(try await harness.post("/v1/auth/api-token", [:], bearer: access).errorCode == "invalid_request")
            for binding in ["not-a-hash", Base64.urlEncode([UInt8](repeating: 1, count: 31)), Data(SHA256.hash(data: [1])).base64EncodedString()] {
                #expect(
                    try await harness.post("/v1/auth/api-token", ["audience": Self.audience, "binding": binding], bearer: access).errorCode
                        == "invalid_request", "\(binding)")
            }
            // With one audience listed, it need not be named; with none, nothing is issued.
            try await harness.setPolicy(AppPolicy(refreshRequiresAssertion: false, apiAudiences: [Self.audience]))
            #expect(try await harness.post("/v1/auth/api-token", [:], bearer: access)["audience"] == Self.audience)
            try await harness.setPolicy(AppPolicy(refreshRequiresAssertion: false))
            #expect(try await harness.post("/v1/auth/api-token", [:], bearer: access).errorCode == "audience_not_allowed")
            // A relay's audience needs no listing (only that relay accepts it); it must name a relay.
            #expect(try await harness.post("/v1/auth/api-token", ["audience": "sesame-relay:llm-2"], bearer: access)["audience"] == "sesame-relay:llm-2")
            for malformed in ["sesame-relay:", "sesame-relay:LLM", "sesame-relay:-llm", "sesame-relay:llm/x"] {
                #expect(try await harness.post("/v1/auth/api-token", ["audience": malformed], bearer: access).errorCode == "audience_not_allowed", "\(malformed)")
            }
        }
    }

    @Test("refused as delivery would refuse the access token: a revoked key, an emergency revocation, a kill switch")
    func gates() async throws {
        try await AuthHarness.run(policy: Self.policy) { harness in
            let request = ["audience": Self.audience]
            let killed = try #require(try await harness.attestNewKey(appVersion: "1.0.0").1["accessToken"])
            try await harness.database.query(
                "INSERT INTO kill_switches (app_id, version, reason) VALUES (\(AuthHarness.appID), '1.0.0', 'Update from the App Store.')")
            let switchedOff = try await harness.post("/v1/auth/api-token", request, bearer: killed)
            #expect(switchedOff.errorCode == "version_disabled")
            #expect((switchedOff.json["error"] as? [String: Any])?["message"] as? String == "Update from the App Store.")

            let revokedVersion = try #require(try await harness.attestNewKey(appVersion: "2.1.3").1["accessToken"])
            let unaffected = try #require(try await harness.attestNewKey(appVersion: "3.0.0").1["accessToken"])
            try await harness.database.query(
                "INSERT INTO revocations (app_id, version_pattern, issued_before) VALUES (\(AuthHarness.appID), '2.*', now())")
            #expect(try await harness.post("/v1/auth/api-token", request, bearer: revokedVersion).errorCode == "token_revoked")
            #expect(try await harness.post("/v1/auth/api-token", request, bearer: unaffected).status == .ok)

            try await harness.database.query("UPDATE attested_keys SET revoked_at = now()")
            #expect(try await harness.post("/v1/auth/api-token", request, bearer: unaffected).errorCode == "token_revoked")
        }
    }
}

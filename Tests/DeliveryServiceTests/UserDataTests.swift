import Foundation
import Hummingbird
import HummingbirdTesting
import JWTKit
import NIOFoundationEssentialsCompat
import PostgresNIO
import SesameTestSupport
import Testing

/// An identity issuer of the test's own: a P-256 key that signs ID tokens.
struct TestIssuer: Sendable {
    let issuer = "https://id.example.test"
    let audience = "com.example.app"
    let key = ES256PrivateKey()

    var publicKeyPEM: String { key.publicKey.pemRepresentation }

    struct Claims: JWTPayload {
        var iss: IssuerClaim
        var sub: SubjectClaim
        var aud: AudienceClaim
        var exp: ExpirationClaim
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// An ID token for `subject`, as the issuer would sign it (each field can be spoiled).
    func token(
        subject: String, issuer: String? = nil, audience: String? = nil, expires: Date = Date().addingTimeInterval(600),
        signedBy other: ES256PrivateKey? = nil, kid: String? = nil
    ) async throws -> String {
        let claims = Claims(
            iss: .init(value: issuer ?? self.issuer), sub: .init(value: subject), aud: .init(value: [audience ?? self.audience]),
            exp: .init(value: expires))
        return try await JWTKeyCollection().add(ecdsa: other ?? key, kid: kid.map { JWKIdentifier(string: $0) }).sign(claims)
    }

    var policy: [String: Any] {
        ["identityIssuer": ["issuer": issuer, "audiences": [audience], "publicKeysPEM": publicKeyPEM]]
    }
}

@Suite("Delivery: per-user data", .timeLimit(.minutes(3)))
struct UserDataTests {
    @Test("create with If-Match \"0\", read with its ETag, conditional updates, one winner among concurrent writers")
    func optimisticConcurrency() async throws {
        try await DeliveryHarness.run(connections: .many) { harness in
            let token = try await harness.app.attest(with: harness.auth).accessToken
            let issuer = TestIssuer()
            try await harness.setPolicy(issuer.policy) { instance in
                try await harness.userData(.get, identityToken: try await issuer.token(subject: "probe"), token: token, instance: instance).status == .notFound
            }
            let user = try await issuer.token(subject: "_icloud_record_0123456789abcdef")
            #expect(try await harness.userData(.get, identityToken: user, token: token).status == .notFound)
            let created = try await harness.userData(.put, identityToken: user, token: token, body: #"{"score":1,"secret":"plain-marker"}"#, ifMatch: "\"0\"")
            #expect(created.status == .ok)
            #expect(created.etag == "\"1\"")
            #expect(try await harness.userData(.put, identityToken: user, token: token, body: #"{"score":9}"#, ifMatch: "\"0\"").status == .preconditionFailed)

            let read = try await harness.userData(.get, identityToken: user, token: token)
            #expect(read.body == #"{"score":1,"secret":"plain-marker"}"#)
            #expect(read.etag == "\"1\"")
            #expect(try await harness.userData(.put, identityToken: user, token: token, body: #"{"score":2}"#, ifMatch: "\"1\"").etag == "\"2\"")

            // Two writers holding version 2: exactly one wins, the other is told to merge.
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for score in [3, 4] {
                    group.addTask {
                        Int(try await harness.userData(.put, identityToken: user, token: token, body: #"{"score":\#(score)}"#, ifMatch: "\"2\"").status.code)
                    }
                }
                var collected: [Int] = []
                for try await status in group { collected.append(status) }
                return collected.sorted()
            }
            #expect(statuses == [200, 412])

            // Other users are separate; the raw id and the plaintext are not stored.
            #expect(try await harness.userData(.get, identityToken: try await issuer.token(subject: "someone-else"), token: token).status == .notFound)
            let rows = try await harness.database.query("SELECT user_hash, body FROM user_data")
            for try await (hash, body) in rows.decode((Data, Data).self) {
                #expect(!String(decoding: hash, as: UTF8.self).contains("icloud"))
                #expect(!String(decoding: body, as: UTF8.self).contains("plain-marker") && !String(decoding: body, as: UTF8.self).contains("score"))
            }
        }
    }

    @Test("another install cannot read or overwrite a user's data by naming the user: it must prove the user")
    func anotherInstallCannotNameAUser() async throws {
        try await DeliveryHarness.run { harness in
            let deviceA = try await harness.app.attest(with: harness.auth).accessToken
            let deviceB = try await harness.app.attest(with: harness.auth).accessToken
            // The default policy proves users; with no issuer configured, nothing is served.
            let unconfigured = try await harness.userData(.get, userID: "alice", token: deviceB)
            #expect(unconfigured.status == .forbidden)
            #expect(unconfigured.body.contains("identity_not_configured"))
            #expect(try await harness.userData(.get, token: deviceB, query: "?user_id=alice").status == .badRequest)

            let issuer = TestIssuer()
            try await harness.setPolicy(issuer.policy) { instance in
                try await harness.userData(.get, token: deviceB, instance: instance).body.contains("identity_required")
            }
            let alice = try await issuer.token(subject: "alice")
            #expect(try await harness.userData(.put, identityToken: alice, token: deviceA, body: #"{"private":true}"#).status == .ok)
            // Device B naming alice, or showing a forged, expired, foreign or misdirected token.
            #expect(try await harness.userData(.get, userID: "alice", token: deviceB).status == .unauthorized)
            for (name, forged) in [
                ("another key", try await issuer.token(subject: "alice", signedBy: ES256PrivateKey())),
                ("another issuer", try await issuer.token(subject: "alice", issuer: "https://evil.example")),
                ("another audience", try await issuer.token(subject: "alice", audience: "com.evil.app")),
                ("expired", try await issuer.token(subject: "alice", expires: Date().addingTimeInterval(-120))),
                ("garbage", "not-a-token"),
            ] {
                let reply = try await harness.userData(.get, identityToken: forged, token: deviceB)
                #expect(reply.status == .unauthorized, "\(name)")
                #expect(reply.body.contains("identity_invalid"), "\(name)")
                #expect(try await harness.userData(.put, identityToken: forged, token: deviceB, body: #"{"x":1}"#).status == .unauthorized, "\(name)")
            }
            // Bob is someone else; alice herself, on device B, reads her own document.
            #expect(try await harness.userData(.get, identityToken: try await issuer.token(subject: "bob"), token: deviceB).status == .notFound)
            #expect(try await harness.userData(.get, identityToken: alice, token: deviceB).body == #"{"private":true}"#)
        }
    }

    @Test("an issuer's JWKS URL is fetched and its keys verify ID tokens")
    func jwksIssuer() async throws {
        let issuer = TestIssuer()
        let jwks = try JSONSerialization.data(withJSONObject: [
            "keys": [["kty": "EC", "crv": "P-256", "kid": "k1", "alg": "ES256", "use": "sig",
                "x": issuer.key.publicKey.parameters!.x, "y": issuer.key.publicKey.parameters!.y]]
        ])
        let router = Router()
        router.get("jwks.json") { _, _ in Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(data: jwks))) }
        let server = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await server.test(.live) { jwksClient in
            let port = jwksClient.port!
            try await DeliveryHarness.run { harness in
                let token = try await harness.app.attest(with: harness.auth).accessToken
                let policy: [String: Any] = [
                    "identityIssuer": ["issuer": issuer.issuer, "audiences": [issuer.audience], "jwksURL": "http://127.0.0.1:\(port)/jwks.json"]
                ]
                let carol = try await issuer.token(subject: "carol", kid: "k1")
                try await harness.setPolicy(policy) { instance in
                    try await harness.userData(.get, identityToken: carol, token: token, instance: instance).status == .notFound
                }
                #expect(try await harness.userData(.put, identityToken: carol, token: token, body: #"{"c":1}"#).status == .ok)
                #expect(try await harness.userData(.get, identityToken: try await issuer.token(subject: "carol", signedBy: ES256PrivateKey(), kid: "k1"), token: token).status == .unauthorized)
            }
        }
    }

    @Test("unverified ids only when the policy opts in, in a header; the quota bounds new documents")
    func unverifiedAndQuota() async throws {
        try await DeliveryHarness.run { harness in
            let token = try await harness.app.attest(with: harness.auth).accessToken
            try await harness.setPolicy(["userIdentity": "unverified", "userDocumentQuota": 2]) { instance in
                try await harness.userData(.get, userID: "probe", token: token, instance: instance).status == .notFound
            }
            #expect(try await harness.userData(.put, userID: "u1", token: token, body: #"{"n":1}"#).status == .ok)
            #expect(try await harness.userData(.put, userID: "u2", token: token, body: #"{"n":2}"#).status == .ok)
            let third = try await harness.userData(.put, userID: "u3", token: token, body: #"{"n":3}"#)
            #expect(third.status == .forbidden)
            #expect(third.body.contains("user_quota_exceeded"))
            // Existing documents still update.
            #expect(try await harness.userData(.put, userID: "u1", token: token, body: #"{"n":4}"#, ifMatch: "\"1\"").status == .ok)
            #expect(try await harness.userData(.get, token: token, query: "?user_id=u1").status == .badRequest)
        }
    }

    @Test("malformed requests: no user, not a JSON object, oversize, bad If-Match, no token")
    func refusals() async throws {
        try await DeliveryHarness.run { harness in
            let token = try await harness.app.attest(with: harness.auth).accessToken
            try await harness.setPolicy(["userIdentity": "unverified"]) { instance in
                try await harness.userData(.get, userID: "probe", token: token, instance: instance).status == .notFound
            }
            #expect(try await harness.userData(.get, token: token).status == .badRequest)
            #expect(try await harness.userData(.put, userID: "u", token: token, body: "[1,2]").status == .badRequest)
            #expect(try await harness.userData(.put, userID: "u", token: token, body: "not json").status == .badRequest)
            #expect(try await harness.userData(.put, userID: "u", token: token, body: #"{"a":1}"#, ifMatch: "W/\"x\"").status == .badRequest)
            let large = #"{"a":""# + String(repeating: "x", count: 300 * 1024) + #""}"#
            #expect(try await harness.userData(.put, userID: "u", token: token, body: large).status == .contentTooLarge)
            #expect(try await harness.userData(.get, userID: "u", token: "garbage").status == .unauthorized)
        }
    }
}

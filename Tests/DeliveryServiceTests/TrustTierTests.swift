import AuthService
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOFoundationEssentialsCompat
import PostgresNIO
import SesameConfiguration
import SesameServer
import SesameTestSupport
import Testing

/// Trust tiers through HTTP: debug tokens and unattested installs get tokens of their tier from
/// auth, and delivery serves them only what their tier may see.
@Suite("Trust tiers: debug tokens, unattested installs, per-key tiers", .timeLimit(.minutes(3)))
struct TrustTierTests {
    static var config: [String: Any] { ["api_keys": ["stripe": "sk_live_tier"], "features": ["chat": true], "beta": ["on": 1]] }
    static let tiers = ["features": "unattested", "beta": "debug"]

    @Test("a debug token fetches the keys its tier may see, is told which were withheld, and every use is audited")
    func debugToken() async throws {
        try await DeliveryHarness.run { harness in
            let revision = try await harness.uploadTiered(Self.config, tiers: Self.tiers, version: "*")
            let attested = try await harness.app.attest(with: harness.auth, appVersion: "2.1.3").accessToken
            try await harness.waitUntilServed(version: "2.1.3", revision: revision, token: attested)

            let created = try await harness.manage(.post, "debug-tokens", ["name": "ci", "ttl": "7d"])
            let debugToken = try #require(created["debugToken"] as? String)
            #expect(debugToken.hasPrefix("sesame_debug_"))
            let exchanged = try await harness.exchangeDebugToken(debugToken, appVersion: "2.1.3")
            #expect(exchanged.status == .ok && exchanged.json["tier"] as? String == "debug" && exchanged.json["refreshToken"] == nil)
            let token = try #require(exchanged.json["accessToken"] as? String)
            #expect(try Self.claims(of: token)["tier"] as? String == "debug")

            let reply = try await harness.fetch(version: "2.1.3", token: token)
            #expect(reply.status == .ok && reply.json["tier"] as? String == "debug")
            #expect(reply.config?.keys.sorted() == ["beta", "features"])
            #expect(reply.json["withheld"] as? [String] == ["api_keys"])
            // The ETag covers exactly what was sent: not the attested caller's, and a 304 for this tier's.
            let whole = try await harness.fetch(version: "2.1.3", token: attested)
            #expect(whole.config?.keys.sorted() == ["api_keys", "beta", "features"] && whole.json["withheld"] == nil)
            #expect(whole.json["tier"] as? String == "attested")
            let etag = try #require(reply.headers[.eTag])
            #expect(etag != whole.headers[.eTag])
            #expect(try await harness.fetch(version: "2.1.3", token: token, ifNoneMatch: etag).status == .notModified)
            #expect(try await harness.fetch(version: "2.1.3", token: attested, ifNoneMatch: etag).status == .ok)
            // A scope cannot reach a withheld key.
            let scoped = try await harness.fetch(version: "2.1.3", token: token, scope: "api_keys.stripe,features.chat")
            #expect(scoped.config?.keys.sorted() == ["features"])
            // Blobs and user data need attested unless the policy lowers them.
            #expect(try await harness.blobLink("model.bin", token: token).errorCode == "tier_insufficient")
            #expect(try await harness.userData(.get, userID: "u1", token: token).status == .forbidden)

            // Listed without the token; each use audited under its name.
            let listed = try await harness.manage(.get, "debug-tokens", [:])
            let summary = try #require((listed["tokens"] as? [[String: Any]])?.first)
            #expect(summary["name"] as? String == "ci" && summary["uses"] as? Int == 1 && !"\(listed)".contains(debugToken))
            let audit = try await harness.manage(.get, "audit?limit=100", [:])
            let entries = audit["entries"] as? [[String: Any]] ?? []
            #expect(entries.contains { $0["action"] as? String == "debug_token.create" })
            #expect(entries.contains { $0["action"] as? String == "debug_token.use" && $0["actor"] as? String == "debug token 'ci'" })
        }
    }

    @Test("an unknown, expired, revoked or other app's debug token is refused; a name is live once")
    func debugTokenRefusals() async throws {
        try await DeliveryHarness.run { harness in
            #expect(try await harness.exchangeDebugToken("sesame_debug_" + String(repeating: "A", count: 43)).errorCode == "debug_token_invalid")
            #expect(try await harness.exchangeDebugToken("garbage").errorCode == "debug_token_invalid")
            #expect(try await harness.manageReply(.post, "debug-tokens", ["name": "ci", "ttl": 31 * 86_400]).errorCode == "invalid_request")
            #expect(try await harness.manageReply(.post, "debug-tokens", ["name": "", "ttl": 3600]).errorCode == "invalid_request")

            let expiring = try #require(try await harness.manage(.post, "debug-tokens", ["name": "old", "ttl": 3600])["debugToken"] as? String)
            #expect(try await harness.exchangeDebugToken(expiring).status == .ok)
            try await harness.database.query("UPDATE debug_tokens SET expires_at = now() - interval '1 second' WHERE name = 'old'")
            #expect(try await harness.exchangeDebugToken(expiring).errorCode == "debug_token_expired")
            // An expired token gives its name up.
            #expect(try await harness.manage(.post, "debug-tokens", ["name": "old", "ttl": 3600])["debugToken"] is String)

            let revoked = try #require(try await harness.manage(.post, "debug-tokens", ["name": "anna", "ttl": "1h"])["debugToken"] as? String)
            #expect(try await harness.manageReply(.post, "debug-tokens", ["name": "anna", "ttl": "1h"]).errorCode == "debug_token_exists")
            #expect(try await harness.manageReply(.delete, "debug-tokens/anna", [:]).status == .ok)
            #expect(try await harness.exchangeDebugToken(revoked).errorCode == "debug_token_revoked")
            #expect(try await harness.manageReply(.delete, "debug-tokens/anna", [:]).errorCode == "debug_token_not_found")

            // Another app's token does not open this app.
            let other = try await harness.createApp(bundleID: "com.example.other")
            let foreign = try #require(
                try await harness.manage(.post, "debug-tokens", ["name": "ci", "ttl": "1h"], key: other.key)["debugToken"] as? String)
            #expect(try await harness.exchangeDebugToken(foreign).errorCode == "debug_token_invalid")
            #expect(try await harness.exchangeDebugToken(foreign, bundleID: "com.example.other").status == .ok)
        }
    }

    @Test("revoking a debug token, or a policy that stops admitting unattested installs, stops the access tokens already issued on every instance")
    func issuedTokensStopWithTheirTier() async throws {
        try await DeliveryHarness.run { harness in
            let revision = try await harness.uploadTiered(Self.config, tiers: Self.tiers, version: "*")
            var policy = try #require(try await harness.manage(.get, "policy", [:])["policy"] as? [String: Any])
            policy["admitUnattested"] = true
            try await harness.manage(.put, "policy", policy)
            let leaked = try #require(try await harness.manage(.post, "debug-tokens", ["name": "leaked", "ttl": "1h"])["debugToken"] as? String)
            let kept = try #require(try await harness.manage(.post, "debug-tokens", ["name": "kept", "ttl": "1h"])["debugToken"] as? String)
            let leakedAccess = try #require(try await harness.exchangeDebugToken(leaked, appVersion: "2.0").json["accessToken"] as? String)
            let keptAccess = try #require(try await harness.exchangeDebugToken(kept, appVersion: "2.0").json["accessToken"] as? String)
            let unattested = try #require(try await harness.admitUnattested().json["accessToken"] as? String)
            for token in [leakedAccess, keptAccess, unattested] {
                try await harness.waitUntilServed(version: "2.0", revision: revision, token: token)
            }

            #expect(try await harness.manageReply(.delete, "debug-tokens/leaked", [:]).status == .ok)
            for instance in harness.deliveries.indices {
                try await eventually(timeout: .seconds(5), "delivery \(instance) refuses the revoked debug token's access token") {
                    try await harness.fetch(version: "2.0", token: leakedAccess, instance: instance).errorCode == "token_revoked"
                }
                #expect(try await harness.fetch(version: "2.0", token: keptAccess, instance: instance).status == .ok)
            }

            policy["admitUnattested"] = false
            try await harness.setPolicy(policy) { instance in
                try await harness.fetch(version: "2.0", token: unattested, instance: instance).errorCode == "token_revoked"
            }
            #expect(try await harness.fetch(version: "2.0", token: keptAccess).status == .ok)
        }
    }

    @Test("a production deployment refuses debug tokens unless the app's policy allows them")
    func debugTokensInProduction() async throws {
        try await DeliveryHarness.run { harness in
            let debugToken = try #require(try await harness.manage(.post, "debug-tokens", ["name": "ci", "ttl": "1h"])["debugToken"] as? String)
            var production = harness.configuration
            production.environment = .production
            production.appAttestExtraRootsPEM = nil
            try await AuthService.buildApplication(configuration: production).test(.live) { auth in
                try await DeliveryHarness.ready(auth)
                #expect(try await harness.exchangeDebugToken(debugToken, auth: auth).errorCode == "debug_tokens_not_allowed")
                #expect(try await harness.exchangeDebugToken(debugToken).status == .ok, "development accepts it")
                var policy = try #require(try await harness.manage(.get, "policy", [:])["policy"] as? [String: Any])
                policy["allowDebugTokensInProduction"] = true
                try await harness.setPolicy(policy) { _ in true }
                #expect(try await harness.exchangeDebugToken(debugToken, auth: auth).status == .ok)
            }
        }
    }

    @Test("unattested installs: refused unless admitted; then challenge-bound, and never an attested-only key, a ZK config, a blob or user data")
    func unattested() async throws {
        try await DeliveryHarness.run { harness in
            let revision = try await harness.uploadTiered(Self.config, tiers: Self.tiers, version: "2.*")
            #expect(try await harness.admitUnattested().errorCode == "unattested_not_admitted")
            var policy = try #require(try await harness.manage(.get, "policy", [:])["policy"] as? [String: Any])
            #expect(policy["admitUnattested"] as? Bool == false && policy["blobTier"] as? String == "attested")
            policy["admitUnattested"] = true
            let changed = try await harness.manage(.put, "policy", policy)
            #expect(changed["changed"] as? [String] == ["admitUnattested"])

            let admitted = try await harness.admitUnattested()
            #expect(admitted.status == .ok && admitted.json["tier"] as? String == "unattested")
            let token = try #require(admitted.json["accessToken"] as? String)
            #expect(try Self.claims(of: token)["tier"] as? String == "unattested")
            // The challenge is spent: the same nonce earns nothing twice.
            let nonce = try await harness.challenge()
            #expect(try await harness.admitUnattested(nonce: nonce).status == .ok)
            #expect(try await harness.admitUnattested(nonce: nonce).errorCode == "invalid_challenge")

            try await harness.waitUntilServed(version: "2.0", revision: revision, token: token)
            let reply = try await harness.fetch(version: "2.0", token: token)
            #expect(reply.config?.keys.sorted() == ["features"] && reply.json["withheld"] as? [String] == ["api_keys", "beta"])
            #expect(try await harness.blobLink("model.bin", token: token).errorCode == "tier_insufficient")
            #expect(try await harness.userData(.get, userID: "u1", token: token).status == .forbidden)

            // A zero-knowledge config is attested-only, and cannot be uploaded with lower tiers.
            let envelope: [String: Any] = [
                "sesameVault": 1, "kdf": ["name": "scrypt", "n": 1024, "r": 8, "p": 1, "salt": "AAAAAAAAAAAAAAAAAAAAAA=="],
                "cipher": "AES-256-GCM", "nonce": "AAAAAAAAAAAAAAAA", "ciphertext": "AAAAAAAAAAAAAAAAAAAAAAAA",
            ]
            let refused = try await harness.manageReply(.post, "config/upload", ["version": "3.*", "config": envelope, "tiers": ["x": "debug"]])
            #expect(refused.errorCode == "invalid_request" && refused.errorMessage?.contains("tiers") == true)
            let sealed = try await harness.upload(envelope, version: "3.*")
            let attested = try await harness.app.attest(with: harness.auth).accessToken
            try await harness.waitUntilServed(version: "3.0", revision: sealed, token: attested)
            #expect(try await harness.fetch(version: "3.0", token: token).errorCode == "tier_insufficient")

            // The policy can lower blobs to unattested: the link is then given.
            policy["blobTier"] = "unattested"
            try await harness.setPolicy(policy) { instance in
                try await harness.blobLink("model.bin", token: token, instance: instance).errorCode != "tier_insufficient"
            }
            #expect(try await harness.blobLink("model.bin", token: token).errorCode == "blob_not_found")
        }
    }

    /// The payload of a JWT, unverified (the services verify; the test reads what they wrote).
    static func claims(of token: String) throws -> [String: Any] {
        var payload = String(token.split(separator: ".")[1]).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while payload.count % 4 != 0 { payload += "=" }
        let data = try #require(Data(base64Encoded: payload))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }
}

extension DeliveryHarness {
    func uploadTiered(_ config: Any, tiers: [String: String], version: String) async throws -> Int {
        let reply = try await manage(.post, "config/upload", ["version": version, "config": config, "tiers": tiers])
        return try #require(reply["revision"] as? Int, "\(reply)")
    }

    /// A management call's status and body.
    func manageReply(_ method: HTTPRequest.Method, _ path: String, _ json: [String: Any]) async throws -> Reply {
        try await admin.execute(
            uri: "/v1/admin/\(path)", method: method, headers: [.authorization: "Bearer \(key)", .contentType: "application/json"],
            body: ByteBuffer(data: try JSONSerialization.data(withJSONObject: json))
        ) { Reply($0) }
    }

    func post(_ path: String, _ json: [String: Any], to client: (any TestClientProtocol)? = nil) async throws -> Reply {
        try await (client ?? auth).execute(
            uri: path, method: .post, headers: [.contentType: "application/json"], body: ByteBuffer(data: try JSONSerialization.data(withJSONObject: json))
        ) { Reply($0) }
    }

    func exchangeDebugToken(
        _ token: String, appVersion: String = "2.1.3", bundleID: String = DeliveryHarness.bundleID, auth: (any TestClientProtocol)? = nil
    ) async throws -> Reply {
        try await post("/v1/auth/debug", ["debugToken": token, "teamId": Self.teamID, "bundleId": bundleID, "appVersion": appVersion], to: auth)
    }

    func challenge() async throws -> String {
        try #require(try await post("/v1/auth/challenge", [:]).json["nonce"] as? String)
    }

    func admitUnattested(nonce: String? = nil) async throws -> Reply {
        let nonce = if let nonce { nonce } else { try await challenge() }
        return try await post("/v1/auth/unattested", ["nonce": nonce, "teamId": Self.teamID, "bundleId": Self.bundleID, "appVersion": "2.0"])
    }
}

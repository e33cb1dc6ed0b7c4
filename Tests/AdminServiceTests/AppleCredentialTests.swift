import AppleFake
import Crypto
import Foundation
import HTTPTypes
import PostgresNIO
import SesameDomain
import SesameTestSupport
import Synchronization
import Testing

@testable import AdminService

/// Issue 59's first step: each app's DeviceCheck key, set write-only and sealed, checked with Apple
/// (a fake written from Apple's documented answers) and shown with what Apple made of it.
@Suite("Admin: Apple credentials", .timeLimit(.minutes(2)))
struct AppleCredentialTests {
    static let keyID = "ABCDE12345"

    /// A new P-256 key as Apple's `.p8` file holds it.
    static func newKey() -> P256.Signing.PrivateKey { P256.Signing.PrivateKey() }

    @Test("a key is set sealed and never shown; Apple's verdict is kept: accepted, refused for an unknown key, rate limited, unreachable")
    func setShowCheck() async throws {
        let apple = FakeDeviceCheck()
        let key = Self.newKey()
        apple.register(keyID: Self.keyID, teamID: AdminHarness.teamID, publicKey: key.publicKey)
        try await apple.run { appleURL in
            try await AdminHarness.run(appleDeviceCheckURL: appleURL) { harness in
                let credential = try await harness.createKey()
                let missing = try await harness.call(.get, "/v1/admin/apple/credentials", credential: credential)
                #expect(missing.status == .notFound && missing.errorCode == "apple_credentials_not_set")

                let set = try await harness.call(
                    .put, "/v1/admin/apple/credentials", credential: credential, json: ["keyId": Self.keyID, "privateKey": key.pemRepresentation])
                #expect(set.status == .ok, "\(set.json)")
                let listed = try #require(set["credentials"] as? [String: Any])
                #expect(listed["keyId"] as? String == Self.keyID && listed["teamId"] as? String == AdminHarness.teamID)
                #expect((listed["check"] as? [String: Any])?["outcome"] as? String == "accepted", "\(listed)")
                #expect(apple.calls.withLock { $0 } == ["v1/query_two_bits"])

                // Never shown, never in clear at rest.
                let shown = try await harness.call(.get, "/v1/admin/apple/credentials", credential: credential)
                #expect(shown.status == .ok && shown["keyId"] as? String == Self.keyID)
                let pemBody = key.pemRepresentation.split(separator: "\n").dropFirst().first.map(String.init) ?? "none"
                for reply in [set, shown] { #expect(!String(decoding: reply.body, as: UTF8.self).contains(pemBody)) }
                let rows = try await harness.database.query("SELECT private_key_ciphertext FROM apple_credentials")
                for try await sealed in rows.decode(Data.self) {
                    #expect(!String(decoding: sealed, as: UTF8.self).contains(pemBody) && sealed.range(of: key.rawRepresentation) == nil)
                }

                // A key Apple does not know is kept, and shown as refused, with what to check.
                let unknown = try await harness.call(
                    .put, "/v1/admin/apple/credentials", credential: credential, json: ["keyId": "ZZZZZ99999", "privateKey": Self.newKey().pemRepresentation])
                let refused = try #require((unknown["credentials"] as? [String: Any])?["check"] as? [String: Any])
                #expect(unknown.status == .ok && refused["outcome"] as? String == "refused" && (refused["message"] as? String)?.contains("401") == true)

                apple.forcedStatus.withLock { $0 = .tooManyRequests }
                let limited = try await harness.call(.post, "/v1/admin/apple/credentials/check", credential: credential)
                #expect((limited["check"] as? [String: Any])?["outcome"] as? String == "rate_limited", "\(limited.json)")

                // Each change is audited with the key id, never the key.
                let audit = try await harness.call(.get, "/v1/admin/audit", credential: credential)
                let actions = (audit["entries"] as? [[String: Any]] ?? []).compactMap { $0["action"] as? String }
                #expect(actions.filter { $0 == "apple_credentials.set" }.count == 2)
                #expect(!String(decoding: audit.body, as: UTF8.self).contains(pemBody))

                // Three calls to Apple so far; two more, then the app's bound: 429 with Retry-After, Apple not asked.
                apple.forcedStatus.withLock { $0 = nil }
                for _ in 0..<2 { #expect(try await harness.call(.post, "/v1/admin/apple/credentials/check", credential: credential).status == .ok) }
                let asked = apple.calls.withLock { $0.count }
                let bounded = try await harness.call(.post, "/v1/admin/apple/credentials/check", credential: credential)
                #expect(bounded.status == .tooManyRequests && bounded.errorCode == "rate_limited", "\(bounded.json)")
                let refusedSet = try await harness.call(
                    .put, "/v1/admin/apple/credentials", credential: credential, json: ["keyId": Self.keyID, "privateKey": key.pemRepresentation])
                #expect(refusedSet.status == .tooManyRequests && apple.calls.withLock { $0.count } == asked)
                #expect(try await harness.call(.get, "/v1/admin/apple/credentials", credential: credential)["keyId"] as? String == "ZZZZZ99999")

                let removed = try await harness.call(.delete, "/v1/admin/apple/credentials", credential: credential)
                #expect(removed.status == .ok)
                #expect(try await harness.call(.delete, "/v1/admin/apple/credentials", credential: credential).errorCode == "apple_credentials_not_set")
                #expect(try await harness.call(.post, "/v1/admin/apple/credentials/check", credential: credential).errorCode == "apple_credentials_not_set")
            }
        }
    }

    @Test("what is not a DeviceCheck key is refused by field: a key id that is not Apple's, a PEM that is not P-256, a key that is not PEM")
    func invalidKeys() async throws {
        try await AdminHarness.run { harness in
            let credential = try await harness.createKey()
            let rsaLike = "-----BEGIN PRIVATE KEY-----\nMIIBVQIBADANBgkqhkiG9w0BAQEFAASCAT8wggE7AgEAAkEA\n-----END PRIVATE KEY-----"
            for (body, field) in [
                (["keyId": "abc", "privateKey": Self.newKey().pemRepresentation], "keyId"),
                (["keyId": Self.keyID, "privateKey": rsaLike], "privateKey"),
                (["keyId": Self.keyID, "privateKey": "not a key"], "privateKey"),
                (["keyId": Self.keyID, "privateKey": String(repeating: "A", count: 5000)], "privateKey"),
            ] {
                let reply = try await harness.call(.put, "/v1/admin/apple/credentials", credential: credential, json: body)
                #expect(reply.status == .badRequest && reply.errorMessage?.contains(field) == true, "\(reply.json)")
            }
            #expect(try await harness.call(.get, "/v1/admin/apple/credentials", credential: credential).status == .notFound)
        }
    }

    @Test("Apple unreachable: the key is kept and the answer says Apple could not be asked, within the outbound deadline")
    func appleUnreachable() async throws {
        // A port nothing listens on.
        try await AdminHarness.run(appleDeviceCheckURL: "http://127.0.0.1:9") { harness in
            let credential = try await harness.createKey()
            let started = ContinuousClock.now
            let set = try await harness.call(
                .put, "/v1/admin/apple/credentials", credential: credential, json: ["keyId": Self.keyID, "privateKey": Self.newKey().pemRepresentation])
            #expect(ContinuousClock.now - started < .seconds(30))
            let check = try #require((set["credentials"] as? [String: Any])?["check"] as? [String: Any])
            #expect(set.status == .ok && check["outcome"] as? String == "unreachable", "\(set.json)")
            #expect(try await harness.call(.get, "/v1/admin/apple/credentials", credential: credential)["keyId"] as? String == Self.keyID)
        }
    }

    @Test("under the two-person rule the DeviceCheck key, pins and a lifted ban wait for a second key; the key's proposal never shows it")
    func guardedByTheTwoPersonRule() async throws {
        let apple = FakeDeviceCheck()
        let key = Self.newKey()
        apple.register(keyID: Self.keyID, teamID: AdminHarness.teamID, publicKey: key.publicKey)
        try await apple.run { appleURL in
            try await AdminHarness.run(appleDeviceCheckURL: appleURL) { harness in
                let ana = try await harness.createKey(name: "ana")
                let ben = try await harness.createKey(name: "ben")
                let policy = try await harness.call(.put, "/v1/admin/policy", credential: ana, json: ["requireApproval": ["apple_key", "pins", "revocation"]])
                #expect(policy.status == .ok, "\(policy.json)")
                func approve(_ reply: AdminHarness.Reply) async throws {
                    #expect(reply.status == .accepted, "\(reply.json)")
                    let id = try #require((reply["proposal"] as? [String: Any])?["id"] as? String)
                    let approved = try await harness.call(.post, "/v1/admin/changes/\(id)/approve", credential: ben)
                    #expect(approved.status == .ok, "\(approved.json)")
                }

                let pem = key.pemRepresentation
                let proposed = try await harness.call(.put, "/v1/admin/apple/credentials", credential: ana, json: ["keyId": Self.keyID, "privateKey": pem])
                #expect(try await harness.call(.get, "/v1/admin/apple/credentials", credential: ana).status == .notFound, "set before approval")
                #expect(apple.calls.withLock { $0 }.isEmpty, "Apple asked before approval")
                let id = try #require((proposed["proposal"] as? [String: Any])?["id"] as? String)
                let read = String(decoding: try JSONSerialization.data(withJSONObject: try await harness.call(.get, "/v1/admin/changes/\(id)", credential: ben).json), as: UTF8.self)
                let keyBody = pem.split(separator: "\n").dropFirst().first.map(String.init) ?? pem
                #expect(read.contains("(withheld)") && !read.contains(keyBody), "\(read)")
                try await approve(proposed)
                #expect(try await harness.call(.get, "/v1/admin/apple/credentials", credential: ana)["keyId"] as? String == Self.keyID)
                try await approve(try await harness.call(.delete, "/v1/admin/apple/credentials", credential: ana))
                #expect(try await harness.call(.get, "/v1/admin/apple/credentials", credential: ana).status == .notFound)

                let digest = Data(repeating: 7, count: 32).base64EncodedString()
                let pin = try await harness.call(.post, "/v1/admin/pins", credential: ana, json: ["domainName": "api.example.com", "key": digest])
                #expect((try await harness.call(.get, "/v1/admin/pins", credential: ana)["pins"] as? [Any])?.isEmpty == true, "pinned before approval")
                try await approve(pin)
                #expect((try await harness.call(.get, "/v1/admin/pins", credential: ana)["pins"] as? [Any])?.count == 1)
                let encoded = digest.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? digest
                try await approve(try await harness.call(.delete, "/v1/admin/pins?domainName=api.example.com&key=\(encoded)", credential: ana))
                #expect((try await harness.call(.get, "/v1/admin/pins", credential: ana)["pins"] as? [Any])?.isEmpty == true)

                // A lifted ban is a revocation's kind of change: proposed, not done (this device was never banned).
                let unban = try await harness.call(
                    .post, "/v1/admin/devices/unban", credential: ana, json: ["keyId": Base64.urlEncode(Data(repeating: 1, count: 32)), "reason": "appeal"])
                #expect(unban.status == .accepted, "\(unban.json)")
            }
        }
    }
}

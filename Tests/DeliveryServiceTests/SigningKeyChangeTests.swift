import Foundation
import HTTPTypes
import SesameTestSupport
import SesameTokens
import Testing

/// Delivery and auth's signing keys changing under it, learned the way that comes first: from a
/// token naming a key delivery does not know yet. The broker is unreachable here, so no rotation
/// event can arrive: configs arrive by the resync (every 3 s), and the keys by the unknown-key path
/// within the few milliseconds each check takes.
@Suite("Delivery: signing key changes", .timeLimit(.minutes(3)))
struct SigningKeyChangeTests {
    /// No broker listens there: events never arrive.
    static let deadBroker = ["127.0.0.1:9"]

    @Test("a revoked key's remembered tokens are refused once delivery learns the new key set from a token naming the new key")
    func revokedKeyForgetsRememberedTokens() async throws {
        try await DeliveryHarness.run(kafkaBrokers: Self.deadBroker, resyncInterval: .seconds(3)) { harness in
            let revision = try await harness.upload(["ok": true], version: "*")
            let old = try await harness.app.attest(with: harness.auth, appVersion: "1.0").accessToken
            try await harness.waitUntilServed(version: "1.0", revision: revision, token: old)
            // Verified once: remembered from now on.
            #expect(try await harness.fetch(version: "1.0", token: old).status == .ok)

            try await harness.withSigningKeys { store, signer in
                _ = try await store.rotate(activatingAfter: .zero, verifyRetiredFor: nil)
                let subject = TokenAuthority.Subject(keyID: "new-device", appID: DeliveryHarness.appID, environment: "production", appVersion: "1.0")
                let fresh = try await signer.issueAccessToken(for: subject).token
                #expect(try await harness.fetch(version: "1.0", token: fresh).status == .ok)
            }
            let refused = try await harness.fetch(version: "1.0", token: old)
            #expect(refused.status == .unauthorized && refused.errorCode == "invalid_token", "\(refused.json)")
        }
    }

    @Test("a token signed by a key made just after delivery's last reload is accepted at once, not a second later")
    func brandNewKeyIsAcceptedAtOnce() async throws {
        try await DeliveryHarness.run(kafkaBrokers: Self.deadBroker, resyncInterval: .seconds(3)) { harness in
            let revision = try await harness.upload(["ok": true], version: "*")
            let first = try await harness.app.attest(with: harness.auth, appVersion: "1.0").accessToken
            try await harness.waitUntilServed(version: "1.0", revision: revision, token: first)

            try await harness.withSigningKeys { store, signer in
                let subject = TokenAuthority.Subject(keyID: "new-device", appID: DeliveryHarness.appID, environment: "production", appVersion: "1.0")
                for attempt in 1...3 {
                    // A token naming a key nobody has: delivery reloads its keys now.
                    let unknown = try await signer.issueAccessToken(for: subject).token
                    _ = try await harness.fetch(version: "1.0", token: Self.renamingKey(unknown, to: "no-such-key-\(attempt)"))
                    // `rotate-signing-key --now` within that second, and the first install it signs for.
                    _ = try await store.rotate(activatingAfter: .zero, verifyRetiredFor: .seconds(3600))
                    try await signer.reload()
                    let fresh = try await signer.issueAccessToken(for: subject).token
                    let reply = try await harness.fetch(version: "1.0", token: fresh)
                    #expect(reply.status == .ok, "attempt \(attempt): \(reply.json)")
                }
            }
        }
    }

    /// `token` with its header's `kid` replaced (the signature no longer matches, which does not
    /// matter: delivery looks the key up first).
    static func renamingKey(_ token: String, to kid: String) -> String {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        let header = #"{"alg":"ES256","typ":"at+jwt","kid":"\#(kid)"}"#
        let encoded = Data(header.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        return ([encoded] + parts.dropFirst().map(String.init)).joined(separator: ".")
    }
}

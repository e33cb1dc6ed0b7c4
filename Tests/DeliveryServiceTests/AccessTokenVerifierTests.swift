import Foundation
import Logging
import SesameTestSupport
import SesameTokens
import Testing

@testable import DeliveryService

/// The verdicts delivery remembers for its hot path: kept until their token expires, then swept
/// out (an hour-long soak found every replica growing 70–80 MiB an hour while they were kept until
/// the memory was full).
@Suite("Delivery: remembered token verdicts", .timeLimit(.minutes(2)))
struct AccessTokenVerifierTests {
    @Test("verdicts of expired tokens are swept out at the next verification a sweep interval later; live ones stay")
    func expiredVerdictsAreSwept() async throws {
        try await DeliveryHarness.run { harness in
            try await harness.withSigningKeys { store, signer in
                let verifier = AccessTokenVerifier(authority: TokenAuthority(store: store, signs: false, logger: Logger(label: "test")))
                let subject = TokenAuthority.Subject(keyID: "device", appID: DeliveryHarness.appID, environment: "production", appVersion: "1.0")
                // Keys loaded first: a verdict reached while they load is not remembered.
                try await verifier.reloadKeys()
                let now = Date()
                // Issued 14 minutes ago: they expire a minute from now (access tokens live 15).
                var expiring: [String] = []
                for _ in 0..<6 { expiring.append(try await signer.issueAccessToken(for: subject, now: now.addingTimeInterval(-14 * 60)).token) }
                for token in expiring.prefix(5) { _ = try await verifier.verify(token, now: now) }
                #expect(verifier.rememberedCount == 5)
                #expect(verifier.remembered(expiring[0], now: now) != nil)
                // Within the sweep interval nothing is swept.
                _ = try await verifier.verify(expiring[5], now: now.addingTimeInterval(1))
                #expect(verifier.rememberedCount == 6)

                // Two minutes on, the six have expired: the next verification sweeps them out and keeps itself.
                let later = now.addingTimeInterval(120)
                let fresh = try await signer.issueAccessToken(for: subject, now: now).token
                _ = try await verifier.verify(fresh, now: later)
                #expect(verifier.rememberedCount == 1, "expired verdicts kept: \(verifier.rememberedCount)")
                #expect(verifier.remembered(fresh, now: later) != nil)
                #expect(verifier.remembered(expiring[0], now: later) == nil)
            }
        }
    }
}

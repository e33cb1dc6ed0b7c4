import Foundation
import Testing

@testable import SesameKit

/// The attestation ramp on the device: each install's place, and what SesameKit does with the ramp
/// Sesame announces.
@Suite("The attestation ramp")
struct AttestationRampTests {
    @Test("over 100,000 installs, a ramp of 1 % admits about 1 %, 50 % about half; an install's place differs across apps")
    func placesAreUniform() {
        let installs = (0..<100_000).map { _ in UUID().uuidString.lowercased() }
        for percent in [1.0, 10.0, 50.0] {
            let admitted = installs.filter { AttestationRamp.admits(installID: $0, appID: "A1B2C3D4E5.com.example.app", percent: percent) }.count
            let share = Double(admitted) / 1000  // in percent
            #expect(abs(share - percent) < max(0.2, percent * 0.05), "\(percent) % admitted \(share) %")
        }
        #expect(installs.allSatisfy { AttestationRamp.admits(installID: $0, appID: "A", percent: 100) })
        #expect(!installs.contains { AttestationRamp.admits(installID: $0, appID: "A", percent: 0) })
        let inOne = installs.prefix(10_000).filter { AttestationRamp.admits(installID: $0, appID: "A.one", percent: 50) }
        let inBoth = inOne.filter { AttestationRamp.admits(installID: $0, appID: "A.two", percent: 50) }
        #expect((2_200...2_800).contains(inBoth.count), "places are independent across apps: \(inBoth.count) of \(inOne.count)")
    }

    @Test("an install outside the ramp uses the unattested tier without attesting; the ramp widened, its next launch attests")
    func outsideTheRampThenIn() async throws {
        var harness = Harness()
        // Every fetch asks Sesame (a saved copy is not served while it revalidates), so each shows its tier.
        harness.cachePolicy.onStaleConfig = .failHard
        harness.sesame.with {
            $0.admitUnattested = true
            $0.openKeys = ["features"]
            $0.attestationRamp = 0
        }
        let config = try await harness.client().fetchConfig()
        #expect(config.tier == .unattested)
        #expect(harness.sesame.count("/v1/auth/attest") == 0 && harness.sesame.count("/v1/auth/unattested") == 1)
        // One challenge served the ramp and the unattested ask.
        #expect(harness.sesame.count("/v1/auth/challenge") == 1)
        let installID = try harness.store.data(for: StoreKeys.installID)
        #expect(installID != nil)

        harness.sesame.with { $0.attestationRamp = 100 }
        let widened = try await harness.client().fetchConfig()
        #expect(
            widened.tier == .attested && harness.sesame.count("/v1/auth/attest") == 1,
            "\(widened.tier) \(widened.source), attests \(harness.sesame.count("/v1/auth/attest")), unattested \(harness.sesame.count("/v1/auth/unattested"))")
        #expect(try harness.store.data(for: StoreKeys.installID) == installID, "the install keeps its place")
        // Narrowed again: an attested install keeps its key and refreshes.
        harness.sesame.with { $0.attestationRamp = 0 }
        _ = try await harness.client().fetchConfig()
        #expect(harness.sesame.count("/v1/auth/attest") == 1 && harness.sesame.count("/v1/auth/unattested") == 1)
    }
}

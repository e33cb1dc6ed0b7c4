import Foundation
import Testing

@testable import SesameKit

/// The DeviceCheck token an attest carries where the app bans devices: asked before Apple's
/// attestation, so a token `DCDevice` could not make spends no attestation, and the failure is one
/// to try again.
@Suite("SesameKit's DeviceCheck token at attest")
struct DeviceCheckTokenTests {
    @Test("where the app bans devices, a token DCDevice cannot make ends the attempt before Apple attests, as transient; the next try attests with one")
    func tokenFirst() async throws {
        var harness = Harness()
        harness.cachePolicy.onStaleConfig = .failHard
        harness.sesame.with {
            $0.bansDevices = true
            $0.openKeys = ["features"]
        }
        harness.attest.state.withLock { $0.deviceTokens = [nil, Data("device-token".utf8)] }
        let client = harness.client()
        do {
            _ = try await client.fetchConfig()
            Issue.record("a fetch without a device token passed")
        } catch {
            #expect(error.code == "device_check_unavailable" && error.isTransient, "\(error)")
        }
        #expect(harness.attest.state.withLock { $0.attestCalls.isEmpty }, "Apple's attestation was spent without a device token")
        #expect(harness.sesame.count("/v1/auth/attest") == 0)

        _ = try await client.fetchConfig()
        #expect(harness.attest.state.withLock { $0.attestCalls.count } == 1 && harness.sesame.count("/v1/auth/attest") == 1)
    }

    @Test("where the app does not ban, an attest goes without a token DCDevice could not make")
    func tokenNotRequired() async throws {
        var harness = Harness()
        harness.cachePolicy.onStaleConfig = .failHard
        harness.sesame.with { $0.openKeys = ["features"] }
        harness.attest.state.withLock { $0.deviceTokens = [nil] }
        _ = try await harness.client().fetchConfig()
        #expect(harness.sesame.count("/v1/auth/attest") == 1)
    }

    @Test("Sesame's device_check_required is transient: DCDevice fails now and then, and a later try sends a token")
    func requiredIsTransient() {
        #expect(SesameError.server(code: "device_check_required", message: "").isTransient)
        #expect(!SesameError.server(code: "device_banned", message: "").isTransient)
    }
}

import Foundation
import Testing

@testable import SesameKit

/// What SesameKit tells Sesame about App Attest on the device, for the attestation ramp's success
/// rate and the dashboard: why it asks for the unattested tier (once a launch), and an attestation
/// that failed on the device, reported with the challenge it was for.
@Suite("SesameKit's attestation reports")
struct AttestationReportTests {
    @Test("a device without App Attest says so once a launch; an install outside the ramp says so")
    func unattestedReasons() async throws {
        var unsupported = Harness(attest: FakeAppAttest(supported: false))
        unsupported.cachePolicy.onStaleConfig = .failHard
        unsupported.sesame.with {
            $0.admitUnattested = true
            $0.openKeys = ["features"]
        }
        let client = unsupported.client()
        _ = try await client.fetchConfig()
        #expect(unsupported.sesame.with { $0.unattestedReasons } == ["unsupported"])
        // The token is dropped (as when it expires): the next ask in this launch does not say it again.
        unsupported.sesame.with { $0.accessTokens = [] }
        _ = try await client.fetchConfig()
        #expect(unsupported.sesame.with { $0.unattestedReasons } == ["unsupported", nil], "\(unsupported.sesame.requestPaths)")

        var outside = Harness()
        outside.cachePolicy.onStaleConfig = .failHard
        outside.sesame.with {
            $0.admitUnattested = true
            $0.openKeys = ["features"]
            $0.attestationRamp = 0
        }
        _ = try await outside.client().fetchConfig()
        #expect(outside.sesame.with { $0.unattestedReasons } == ["outsideRamp"])
        #expect(outside.sesame.with { $0.failureReports }.isEmpty)
    }

    @Test("Apple unavailable through every retry is reported as serverUnavailable with the attempt's challenge; the app still sees the failure")
    func rateLimitReported() async throws {
        let harness = Harness()
        harness.attest.state.withLock { $0.attestFailures = Array(repeating: .serverUnavailable, count: TokenSession.attestAttempts) }
        await #expect {
            try await harness.client().fetchConfig()
        } throws: { error in
            if case .network = error as? SesameError { return true }
            return false
        }
        // The scripted Sesame counts a report only with a challenge it issued and nothing spent.
        #expect(harness.sesame.with { $0.failureReports } == ["serverUnavailable"])
        #expect(harness.sesame.count("/v1/auth/challenge") == 1 && harness.sesame.count("/v1/auth/attest") == 0)
    }

    @Test("a key App Attest will not attest is reported as failed, then a new key attests; a device failure is reported too")
    func deviceFailuresReported() async throws {
        let invalid = Harness()
        invalid.attest.state.withLock { $0.attestFailures = [.invalidKey] }
        let config = try await invalid.client().fetchConfig()
        #expect(config.tier == .attested)
        #expect(invalid.sesame.with { $0.failureReports } == ["failed"])
        // The reported challenge is spent: the new key's attestation asked for another.
        #expect(invalid.sesame.count("/v1/auth/challenge") == 2)

        let system = Harness()
        system.attest.state.withLock { $0.attestFailures = [.systemFailure(code: 4)] }
        await #expect(throws: SesameError.self) { try await system.client().fetchConfig() }
        #expect(system.sesame.with { $0.failureReports } == ["failed"])
    }

    @Test("a report Sesame cannot take (offline, an older server) changes nothing the app sees")
    func reportIsBestEffort() async throws {
        let harness = Harness()
        harness.attest.state.withLock { $0.attestFailures = [.invalidKey] }
        // An older Sesame without the endpoint: the scripted server answers 404 to unknown paths.
        harness.sesame.with { _ = $0.unknownPaths.insert("/v1/auth/attestation-failure") }
        let config = try await harness.client().fetchConfig()
        #expect(config.tier == .attested && harness.sesame.with { $0.failureReports }.isEmpty)
    }
}

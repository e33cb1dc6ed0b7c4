import Crypto
import Foundation
import SesameKitTesting
import Testing

@testable import SesameKit

@Suite("SesameKitTesting: the software App Attest")
struct SoftwareAppAttestTests {
    @Test("an authority saved as a PEM bundle loads as the same authority; anything else is refused")
    func pemBundle() throws {
        let authority = SoftwareAttestationAuthority(lifetime: 365 * 86400)
        let loaded = try SoftwareAttestationAuthority(pemBundle: try authority.pemBundle)
        #expect(loaded.rootCertificatePEM == authority.rootCertificatePEM)
        #expect(loaded.expiresAt == authority.expiresAt)
        #expect(authority.expiresAt > Date().addingTimeInterval(364 * 86400))
        #expect(throws: (any Error).self) { try SoftwareAttestationAuthority(pemBundle: authority.rootCertificatePEM) }
    }

    @Test("keys are SHA-256 of their public key; attestations and assertions are made for known keys only, assertions counting up")
    func keys() async throws {
        let device = SoftwareAppAttest(appID: "A1B2C3D4E5.com.example.app", authority: SoftwareAttestationAuthority())
        let keyID = try await device.generateKey()
        #expect(Data(base64Encoded: keyID)?.count == 32)
        let attestation = try await device.attestKey(keyID, clientDataHash: Data(repeating: 1, count: 32))
        #expect(attestation.count > 500)
        let first = try await device.generateAssertion(keyID, clientDataHash: Data(repeating: 2, count: 32))
        let second = try await device.generateAssertion(keyID, clientDataHash: Data(repeating: 2, count: 32))
        // The counter is the last 4 bytes of the authenticator data, the last CBOR item.
        #expect(first.suffix(4) == Data([0, 0, 0, 1]) && second.suffix(4) == Data([0, 0, 0, 2]))
        await #expect(throws: AppAttestProviderError.invalidKey) { try await device.attestKey("unknown", clientDataHash: Data()) }
        await #expect(throws: AppAttestProviderError.invalidKey) { try await device.generateAssertion("unknown", clientDataHash: Data()) }
    }
}

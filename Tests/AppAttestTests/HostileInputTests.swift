import AppAttest
import AppAttestTesting
import Crypto
import Foundation
import Testing

@Suite("Hostile attestation input: always an error, never a crash")
struct HostileInputTests {
    @Test("every truncation of a valid attestation is refused")
    func truncations() async throws {
        let attester = try SoftwareAttester()
        let key = attester.generateKey()
        let hash = Array(SHA256.hash(data: [1, 2, 3]))
        let attestation = try attester.attest(key, clientDataHash: hash, appId: "T.app")
        let verifier = AppAttestVerifier(additionalRoots: [attester.rootCertificate])
        for length in stride(from: 0, to: attestation.count, by: 7) {
            await #expect(throws: AppAttestError.self) {
                try await verifier.verifyAttestation(Array(attestation.prefix(length)), keyId: key.keyId, clientDataHash: hash, appId: "T.app", at: Date())
            }
        }
    }

    @Test("random bytes and random single-byte corruptions are refused")
    func randomBytes() async throws {
        let attester = try SoftwareAttester()
        let key = attester.generateKey()
        let hash = Array(SHA256.hash(data: [9]))
        let attestation = try attester.attest(key, clientDataHash: hash, appId: "T.app")
        let verifier = AppAttestVerifier(additionalRoots: [attester.rootCertificate])
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let random = (0..<Int.random(in: 0..<300, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            await #expect(throws: AppAttestError.self) {
                try await verifier.verifyAttestation(random, keyId: key.keyId, clientDataHash: hash, appId: "T.app", at: Date())
            }
            var corrupted = attestation
            let position = Int.random(in: 0..<corrupted.count, using: &generator)
            corrupted[position] ^= UInt8.random(in: 1...255, using: &generator)
            // A flip may land in bytes nobody checks (the receipt); it must never crash, and never
            // verify with a different key, environment or app.
            if let result = try? await verifier.verifyAttestation(corrupted, keyId: key.keyId, clientDataHash: hash, appId: "T.app", at: Date()) {
                #expect(result.publicKey == Array(key.publicKey.x963Representation))
            }
        }
    }

    @Test("an oversized attestation object is refused before decoding")
    func oversized() async {
        await #expect(throws: AppAttestError(.format, "")) {
            try await AppAttestVerifier().verifyAttestation(
                [UInt8](repeating: 0x40, count: 1 << 20), keyId: [], clientDataHash: [], appId: "T.app", at: Date())
        }
    }
}

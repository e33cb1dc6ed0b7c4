import AppAttestTesting
import Crypto
import Foundation
import Testing
import X509

@testable import AppAttest

/// Once a full chain check has led an intermediate to a trusted root, later attestations under it
/// are checked against it as the anchor: the leaf must still be its, and both still valid.
@Suite("Attestation: an intermediate already verified")
struct VerifiedIntermediateTests {
    static let appId = "TEAMID1234.com.example.app"
    let now = Date()
    let clientDataHash = Array(SHA256.hash(data: Array("challenge".utf8)))

    @Test("a known intermediate vouches only within its root's validity, and only after a full check succeeded")
    func remembered() async throws {
        let attester = try SoftwareAttester(now: now)
        let verifier = AppAttestVerifier(additionalRoots: [attester.rootCertificate])
        let intermediate = attester.intermediateCertificate
        #expect(!verifier.verifiedIntermediates.vouchesFor(intermediate, at: now))

        let key = attester.generateKey()
        _ = try await verifier.verifyAttestation(
            try attester.attest(key, clientDataHash: clientDataHash, appId: Self.appId), keyId: key.keyId, clientDataHash: clientDataHash,
            appId: Self.appId, at: now)
        #expect(verifier.verifiedIntermediates.vouchesFor(intermediate, at: now))
        #expect(!verifier.verifiedIntermediates.vouchesFor(intermediate, at: attester.rootCertificate.notValidAfter.addingTimeInterval(1)))
        #expect(!verifier.verifiedIntermediates.vouchesFor(intermediate, at: attester.rootCertificate.notValidBefore.addingTimeInterval(-1)))
        // Another authority's intermediate is not vouched for, whatever its names.
        #expect(!verifier.verifiedIntermediates.vouchesFor(try SoftwareAttester(now: now).intermediateCertificate, at: now))
        // A refused chain vouches for nothing.
        let untrusting = AppAttestVerifier()
        _ = try? await untrusting.verifyAttestation(
            try attester.attest(key, clientDataHash: clientDataHash, appId: Self.appId), keyId: key.keyId, clientDataHash: clientDataHash,
            appId: Self.appId, at: now)
        #expect(!untrusting.verifiedIntermediates.vouchesFor(intermediate, at: now))
    }

    @Test("chain, past a known intermediate: a leaf it did not sign is refused, and so is one outside its validity")
    func shortcutStillChecks() async throws {
        let trusted = try SoftwareAttester(now: now)
        let verifier = AppAttestVerifier(additionalRoots: [trusted.rootCertificate])
        let key = trusted.generateKey()
        let genuine = try trusted.attest(key, clientDataHash: clientDataHash, appId: Self.appId)
        _ = try await verifier.verifyAttestation(genuine, keyId: key.keyId, clientDataHash: clientDataHash, appId: Self.appId, at: now)
        #expect(verifier.verifiedIntermediates.vouchesFor(trusted.intermediateCertificate, at: now))

        // A leaf from another authority (the same names), sent with the known intermediate.
        let impostor = try SoftwareAttester(now: now)
        let impostorKey = impostor.generateKey()
        var forged = impostor.recipe(for: impostorKey, clientDataHash: clientDataHash, appId: Self.appId)
        forged.substituteIntermediate = try SoftwareAttester.der(trusted.intermediateCertificate)
        await #expect(throws: AppAttestError(.chain, "")) {
            try await verifier.verifyAttestation(
                try impostor.attestation(from: forged), keyId: impostorKey.keyId, clientDataHash: clientDataHash, appId: Self.appId, at: now)
        }
        // The genuine attestation, after its certificates expired.
        await #expect(throws: AppAttestError(.chain, "")) {
            try await verifier.verifyAttestation(
                genuine, keyId: key.keyId, clientDataHash: clientDataHash, appId: Self.appId, at: now.addingTimeInterval(3 * 86400))
        }
        // And the next genuine one still verifies.
        let next = trusted.generateKey()
        let attested = try await verifier.verifyAttestation(
            try trusted.attest(next, clientDataHash: clientDataHash, appId: Self.appId), keyId: next.keyId, clientDataHash: clientDataHash,
            appId: Self.appId, at: now)
        #expect(attested.publicKey == Array(next.publicKey.x963Representation))
    }
}

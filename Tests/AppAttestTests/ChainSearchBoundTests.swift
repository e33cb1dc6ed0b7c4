import AppAttestTesting
import CBOR
import Crypto
import Foundation
import SwiftASN1
import Testing
import X509

@testable import AppAttest

/// An attacker who only needs a challenge and a public team/bundle id sends the leaf plus N
/// self-issued certificates (one subject, one key, different subjectAltNames, each signed by that
/// key): every ordering is a candidate chain. Unbounded, N = 5 took 383 ms and each step ~7× more.
@Suite("Chain search: bounded whatever x5c holds")
struct ChainSearchBoundTests {
    /// The leaf and `count` self-issued certificates that all claim to issue each other.
    static func hostileChain(count: Int) throws -> (leaf: Certificate, intermediates: [Certificate]) {
        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName { CommonName("Hostile CA") }
        let now = Date()
        let intermediates = try (0..<count).map { index in
            try Certificate(
                version: .v3, serialNumber: .init(), publicKey: .init(key.publicKey),
                notValidBefore: now.addingTimeInterval(-60), notValidAfter: now.addingTimeInterval(3600),
                issuer: name, subject: name, signatureAlgorithm: .ecdsaWithSHA256,
                extensions: try Certificate.Extensions {
                    Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                    SubjectAlternativeNames([.dnsName("hostile-\(index).example")])
                },
                issuerPrivateKey: .init(key))
        }
        let leaf = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(P256.Signing.PrivateKey().publicKey),
            notValidBefore: now.addingTimeInterval(-60), notValidAfter: now.addingTimeInterval(3600),
            issuer: name, subject: try DistinguishedName { CommonName("leaf") }, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: Certificate.Extensions(), issuerPrivateKey: .init(key))
        return (leaf, intermediates)
    }

    /// A valid attestation whose x5c is replaced by `chain`.
    static func attestation(withChain chain: [Certificate], attester: SoftwareAttester, key: SoftwareAttester.DeviceKey, hash: [UInt8]) throws -> [UInt8] {
        let genuine = try CBORDecoder().decode(try attester.attest(key, clientDataHash: hash, appId: "T.app"))
        guard case .map(let entries) = genuine, let statement = genuine["attStmt"], case .map(let statementEntries) = statement else {
            throw AppAttestError(.format, "unexpected test attestation")
        }
        let x5c = CBORValue.array(try chain.map { .bytes(try SoftwareAttester.der($0)) })
        let newStatement = CBORValue.map(statementEntries.map { $0.key == .text("x5c") ? CBORMapEntry(key: $0.key, value: x5c) : $0 })
        return CBOREncoder.encode(.map(entries.map { $0.key == .text("attStmt") ? CBORMapEntry(key: $0.key, value: newStatement) : $0 }))
    }

    @Test("x5c with the leaf and 9 self-issued intermediates is refused at the format step in well under a second")
    func nineSelfIssuedIntermediates() async throws {
        let attester = try SoftwareAttester()
        let key = attester.generateKey()
        let hash = Array(SHA256.hash(data: [7]))
        let (leaf, intermediates) = try Self.hostileChain(count: 9)
        let hostile = try Self.attestation(withChain: [leaf] + intermediates, attester: attester, key: key, hash: hash)
        let verifier = AppAttestVerifier(additionalRoots: [attester.rootCertificate])
        let started = ContinuousClock.now
        await #expect(throws: AppAttestError(.format, "")) {
            try await verifier.verifyAttestation(hostile, keyId: key.keyId, clientDataHash: hash, appId: "T.app", at: Date())
        }
        // Unbounded, the search grows with the orderings of the intermediates (9! of them); the
        // bound is counted in look-ups, so a second of slack measures the bound, not how
        // busy the first layer's parallel tests keep the two cores.
        #expect(ContinuousClock.now - started < .seconds(1))
    }

    @Test("x5c with one certificate, or three, is refused; the genuine pair still verifies")
    func exactlyTwo() async throws {
        let attester = try SoftwareAttester()
        let key = attester.generateKey()
        let hash = Array(SHA256.hash(data: [8]))
        let genuine = try attester.attest(key, clientDataHash: hash, appId: "T.app")
        let verifier = AppAttestVerifier(additionalRoots: [attester.rootCertificate])
        _ = try await verifier.verifyAttestation(genuine, keyId: key.keyId, clientDataHash: hash, appId: "T.app", at: Date())

        let chain = try #require(try CBORDecoder().decode(genuine)["attStmt"]?["x5c"]?.arrayElements).map {
            try Certificate(derEncoded: try #require($0.byteString))
        }
        for wrong in [[chain[0]], chain + [chain[1]]] {
            let attestation = try Self.attestation(withChain: wrong, attester: attester, key: key, hash: hash)
            await #expect(throws: AppAttestError(.format, "")) {
                try await verifier.verifyAttestation(attestation, keyId: key.keyId, clientDataHash: hash, appId: "T.app", at: Date())
            }
        }
    }

    @Test("the search budget alone (a second wall) stops 9 self-issued intermediates well within a second")
    func budgetStopsTheSearch() async throws {
        let (leaf, intermediates) = try Self.hostileChain(count: 9)
        let verifier = AppAttestVerifier()
        let started = ContinuousClock.now
        await #expect(throws: AppAttestError(.chain, "")) {
            try await verifier.verifyChain(leaf: leaf, intermediates: intermediates, at: Date())
        }
        // Unbounded, the search grows with the orderings of the intermediates (9! of them); the
        // bound is counted in look-ups, so a second of slack measures the bound, not how
        // busy the first layer's parallel tests keep the two cores.
        #expect(ContinuousClock.now - started < .seconds(1))
    }
}

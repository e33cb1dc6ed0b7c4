import AppAttest
import AppAttestTesting
import Crypto
import Foundation
import Testing

/// Attestations and assertions captured from real iPhones (sources and licences inside each
/// fixture file). Device certificates expire after days, so each is verified at the time its
/// source captured it.
@Suite("Real-device App Attest data")
struct RealDeviceFixtureTests {
    struct Fixture: Decodable {
        let source: String
        let licence: String
        let attestation: String
        let keyId: String
        let clientDataHash: String
        let appId: String
        let at: Date
        let expectedEnvironment: AppAttestEnvironment
        let expectedPublicKey: String?
        let assertion: String?
        let assertionClientDataHash: String?
        let assertionPreviousCounter: UInt32?
        let expectedAssertionCounter: UInt32?

        static func load(_ name: String) throws -> Fixture {
            let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/\(name)")
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            return try decoder.decode(Fixture.self, from: Data(contentsOf: url))
        }

        func bytes(_ base64: String) -> [UInt8] { Array(Data(base64Encoded: base64)!) }
    }

    static let fixtures = ["ios-14.4-development.json", "ios-14.2-development.json", "apple-guide-production.json"]

    @Test("every real-device attestation verifies against Apple's root at its capture time", arguments: fixtures)
    func attestationVerifies(name: String) async throws {
        let fixture = try Fixture.load(name)
        #expect(!fixture.source.isEmpty && !fixture.licence.isEmpty)
        let result = try await AppAttestVerifier().verifyAttestation(
            fixture.bytes(fixture.attestation), keyId: fixture.bytes(fixture.keyId),
            clientDataHash: fixture.bytes(fixture.clientDataHash), appId: fixture.appId, at: fixture.at
        )
        #expect(result.environment == fixture.expectedEnvironment)
        #expect(result.counter == 0)
        #expect(result.publicKey.count == 65)
        #expect(!result.receipt.isEmpty)
        if let expected = fixture.expectedPublicKey { #expect(result.publicKey == fixture.bytes(expected)) }
    }

    @Test("a real-device attestation is refused for another app, another environment, another challenge, or after expiry", arguments: fixtures)
    func attestationRefusals(name: String) async throws {
        let fixture = try Fixture.load(name)
        let verifier = AppAttestVerifier()
        let attestation = fixture.bytes(fixture.attestation)
        let keyId = fixture.bytes(fixture.keyId)
        let clientDataHash = fixture.bytes(fixture.clientDataHash)
        let otherEnvironment: AppAttestEnvironment = fixture.expectedEnvironment == .production ? .development : .production

        await #expect(throws: AppAttestError(.rpIdHash, "")) {
            try await verifier.verifyAttestation(attestation, keyId: keyId, clientDataHash: clientDataHash, appId: "ABCDE12345.com.evil.clone", at: fixture.at)
        }
        await #expect(throws: AppAttestError(.aaguid, "")) {
            try await verifier.verifyAttestation(
                attestation, keyId: keyId, clientDataHash: clientDataHash, appId: fixture.appId, environment: otherEnvironment, at: fixture.at)
        }
        await #expect(throws: AppAttestError(.nonce, "")) {
            try await verifier.verifyAttestation(attestation, keyId: keyId, clientDataHash: clientDataHash + [0], appId: fixture.appId, at: fixture.at)
        }
        await #expect(throws: AppAttestError(.chain, "")) {
            try await verifier.verifyAttestation(
                attestation, keyId: keyId, clientDataHash: clientDataHash, appId: fixture.appId, at: fixture.at.addingTimeInterval(30 * 86400))
        }
        var otherKeyId = keyId
        otherKeyId[0] ^= 1
        await #expect(throws: AppAttestError(.keyId, "")) {
            try await verifier.verifyAttestation(attestation, keyId: otherKeyId, clientDataHash: clientDataHash, appId: fixture.appId, at: fixture.at)
        }
    }

    static let fixturesWithAssertions = ["ios-14.4-development.json", "ios-14.2-development.json"]

    @Test("a real-device assertion verifies with the attested key, and its replay is refused", arguments: fixturesWithAssertions)
    func assertionVerifies(name: String) throws {
        let fixture = try Fixture.load(name)
        let publicKey = try P256.Signing.PublicKey(x963Representation: fixture.bytes(try #require(fixture.expectedPublicKey)))
        let assertion = fixture.bytes(try #require(fixture.assertion))
        let clientDataHash = fixture.bytes(try #require(fixture.assertionClientDataHash))
        let verifier = AppAttestVerifier()
        let counter = try verifier.verifyAssertion(
            assertion, clientDataHash: clientDataHash, publicKey: publicKey, appId: fixture.appId,
            previousCounter: try #require(fixture.assertionPreviousCounter))
        #expect(counter == fixture.expectedAssertionCounter)
        #expect(throws: AppAttestError(.counter, "")) {
            try verifier.verifyAssertion(assertion, clientDataHash: clientDataHash, publicKey: publicKey, appId: fixture.appId, previousCounter: counter)
        }
        #expect(throws: AppAttestError(.signature, "")) {
            try verifier.verifyAssertion(assertion, clientDataHash: clientDataHash.reversed(), publicKey: publicKey, appId: fixture.appId, previousCounter: 0)
        }
    }

    @Test("the embedded Apple root is the published one")
    func appleRootFingerprint() throws {
        let der = try SoftwareAttester.der(AppleAppAttestRoot.certificate)
        let fingerprint = SHA256.hash(data: der).map { String(format: "%02x", $0) }.joined()
        #expect(fingerprint == "1cb9823ba28ba6ad2d33a006941de2ae4f513ef1d4e831b9f7e0fa7b6242c932")
    }
}

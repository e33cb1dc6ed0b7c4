import AppAttest
import AppAttestTesting
import Crypto
import Foundation
import SwiftASN1
import X509

// Measures App Attest verification on one core: attestations and assertions per second, for a
// real iPhone capture (verified at its capture time: Apple's P-384 chain) and for a software
// attestation (P-256 test chain). With a file argument, it also writes the software attestation,
// its challenge and root there, so `pyattest_benchmark.py` can time pyattest on the same bytes.

struct RealFixture: Decodable {
    let attestation: String
    let keyId: String
    let clientDataHash: String
    let appId: String
    let at: Date
    let expectedPublicKey: String
    let assertion: String
    let assertionClientDataHash: String

    static func load() throws -> RealFixture {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Tests/AppAttestTests/Fixtures/ios-14.4-development.json")
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(RealFixture.self, from: Data(contentsOf: url))
    }
}

func bytes(_ base64: String) -> [UInt8] { Array(Data(base64Encoded: base64)!) }

/// Runs `operation` for about `seconds` after a short warm-up and prints operations per second.
@discardableResult
func measure(_ label: String, seconds: Double = 3, _ operation: @Sendable () async throws -> Void) async rethrows -> Double {
    for _ in 0..<20 { try await operation() }
    let clock = ContinuousClock()
    let start = clock.now
    var count = 0
    while clock.now - start < .milliseconds(Int(seconds * 1000)) {
        for _ in 0..<10 { try await operation() }
        count += 10
    }
    let elapsed = clock.now - start
    let perSecond = Double(count) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    print("swift \(label): \(String(format: "%.0f", perSecond))/s (\(String(format: "%.1f", 1e6 / perSecond)) µs each, \(count) runs)")
    return perSecond
}

@main
enum AppAttestBenchmark {
    static func main() async throws {
        let verifier = AppAttestVerifier()

        // A real iPhone capture.
        let real = try RealFixture.load()
        let realAttestation = bytes(real.attestation)
        let realPublicKey = try P256.Signing.PublicKey(x963Representation: bytes(real.expectedPublicKey))
        try await measure("attestation, real iPhone capture") {
            _ = try await verifier.verifyAttestation(
                realAttestation, keyId: bytes(real.keyId), clientDataHash: bytes(real.clientDataHash), appId: real.appId, at: real.at)
        }
        let realAssertion = bytes(real.assertion)
        try await measure("assertion, real iPhone capture") {
            _ = try verifier.verifyAssertion(
                realAssertion, clientDataHash: bytes(real.assertionClientDataHash), publicKey: realPublicKey, appId: real.appId,
                previousCounter: 0)
        }

        // A software attestation, as the app passes SHA256(challenge) to attestKey.
        let attester = try SoftwareAttester()
        let key = attester.generateKey()
        let appId = "TEAMID1234.com.example.benchmark"
        let challenge = (0..<32).map { _ in UInt8.random(in: 0...255) }
        let clientDataHash = Array(SHA256.hash(data: challenge))
        let attestation = try attester.attest(key, clientDataHash: clientDataHash, appId: appId)
        let softwareVerifier = AppAttestVerifier(additionalRoots: [attester.rootCertificate])
        try await measure("attestation, software chain") {
            _ = try await softwareVerifier.verifyAttestation(attestation, keyId: key.keyId, clientDataHash: clientDataHash, appId: appId, at: Date())
        }
        let assertionClientDataHash = Array(SHA256.hash(data: Array("{\"challenge\":\"benchmark\"}".utf8)))
        let assertion = try attester.assert(key, clientDataHash: assertionClientDataHash, appId: appId, counter: 1)
        try await measure("assertion, software key") {
            _ = try softwareVerifier.verifyAssertion(
                assertion, clientDataHash: assertionClientDataHash, publicKey: key.publicKey, appId: appId, previousCounter: 0)
        }

        if CommandLine.arguments.count > 1 {
            let input: [String: String] = [
                "rootPem": try attester.rootCertificate.serializeAsPEM().pemString,
                "attestation": Data(attestation).base64EncodedString(),
                "keyId": Data(key.keyId).base64EncodedString(),
                "challenge": Data(challenge).base64EncodedString(),
                "appId": appId,
                "assertion": Data(assertion).base64EncodedString(),
                "assertionClientDataHash": Data(assertionClientDataHash).base64EncodedString(),
                "publicKeyPem": key.publicKey.pemRepresentation,
            ]
            try JSONEncoder().encode(input).write(to: URL(fileURLWithPath: CommandLine.arguments[1]))
        }
    }
}

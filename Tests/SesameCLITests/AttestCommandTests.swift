import AppAttest
import AppAttestTesting
import ArgumentParser
import Crypto
import Foundation
@testable import SesameCLI
import SwiftASN1
import Testing
import X509

@Suite("sesame attest verify | verify-assertion")
struct AttestCommandTests {
    let attester: SoftwareAttester
    let rootPEM: String
    let appId = "TEAMID.com.example.app"

    init() throws {
        attester = try SoftwareAttester()
        rootPEM = try attester.rootCertificate.serializeAsPEM().pemString
    }

    private func json(_ object: [String: Any]) throws -> Data {
        try JSONSerialization.data(withJSONObject: object)
    }

    private func fields(_ outcome: AttestOutcome) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(outcome.line.utf8)) as? [String: Any])
    }

    private func attestationInput(
        _ key: SoftwareAttester.DeviceKey, clientDataHash: [UInt8], environment: String? = nil
    ) throws -> Data {
        var object: [String: Any] = [
            "attestation": Data(try attester.attest(key, clientDataHash: clientDataHash, appId: appId)).base64EncodedString(),
            "keyId": Data(key.keyId).base64EncodedString(),
            "clientDataHash": Data(clientDataHash).base64EncodedString(),
            "appId": appId,
        ]
        object["environment"] = environment
        return try json(object)
    }

    @Test("a valid attestation prints valid, environment, public key, receipt and counter; exit 0")
    func validAttestation() async throws {
        let key = attester.generateKey()
        let outcome = try await AttestRunner.verifyAttestation(
            json: try attestationInput(key, clientDataHash: Array(repeating: 7, count: 32)), rootsPEM: [rootPEM], now: Date())
        #expect(outcome.exitCode == 0)
        #expect(!outcome.line.contains("\n"))
        let output = try fields(outcome)
        #expect(output["valid"] as? Bool == true)
        #expect(output["environment"] as? String == "development")
        #expect(output["publicKey"] as? String == Data(key.publicKey.x963Representation).base64EncodedString())
        #expect(output["counter"] as? Int == 0)
        #expect(output["receipt"] is String)
    }

    @Test("without the test root, the chain step fails; exit 1")
    func untrustedRoot() async throws {
        let outcome = try await AttestRunner.verifyAttestation(
            json: try attestationInput(attester.generateKey(), clientDataHash: [1, 2, 3]), rootsPEM: [], now: Date())
        #expect(outcome.exitCode == 1)
        let output = try fields(outcome)
        #expect(output["valid"] as? Bool == false)
        #expect(output["step"] as? String == "chain")
        #expect((output["error"] as? String)?.isEmpty == false)
    }

    @Test("an environment that does not match is the aaguid step")
    func wrongEnvironment() async throws {
        let outcome = try await AttestRunner.verifyAttestation(
            json: try attestationInput(attester.generateKey(), clientDataHash: [1], environment: "production"),
            rootsPEM: [rootPEM], now: Date())
        #expect(try fields(outcome)["step"] as? String == "aaguid")
    }

    @Test("a real iPhone's attestation verifies at its capture time and is refused today (expired chain)")
    func realDevice() async throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../AppAttestTests/Fixtures/ios-14.4-development.json")
        var fixture = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        let input = try json([
            "attestation": fixture["attestation"]!, "keyId": fixture["keyId"]!, "clientDataHash": fixture["clientDataHash"]!,
            "appId": fixture["appId"]!, "at": fixture["at"]!,
        ])
        let outcome = try await AttestRunner.verifyAttestation(json: input, rootsPEM: [], now: Date())
        #expect(outcome.exitCode == 0)
        #expect(try fields(outcome)["environment"] as? String == "development")

        fixture["at"] = nil
        let today = try await AttestRunner.verifyAttestation(
            json: try json(fixture.filter { ["attestation", "keyId", "clientDataHash", "appId"].contains($0.key) }), rootsPEM: [],
            now: Date())
        #expect(today.exitCode == 1)
        #expect(try fields(today)["step"] as? String == "chain")
    }

    @Test("an assertion verifies with the key as X9.63 base64 or PEM; a replay fails the counter step")
    func assertion() throws {
        let key = attester.generateKey()
        let clientDataHash = Array(SHA256.hash(data: Array("challenge".utf8)))
        let assertion = try attester.assert(key, clientDataHash: clientDataHash, appId: appId, counter: 5)
        for publicKey in [Data(key.publicKey.x963Representation).base64EncodedString(), key.publicKey.pemRepresentation] {
            let valid = try AttestRunner.verifyAssertion(json: try json([
                "assertion": Data(assertion).base64EncodedString(), "clientDataHash": Data(clientDataHash).base64EncodedString(),
                "publicKey": publicKey, "appId": appId, "previousCounter": 4,
            ]))
            #expect(valid.exitCode == 0)
            #expect(try fields(valid)["counter"] as? Int == 5)
        }
        let replay = try AttestRunner.verifyAssertion(json: try json([
            "assertion": Data(assertion).base64EncodedString(), "clientDataHash": Data(clientDataHash).base64EncodedString(),
            "publicKey": Data(key.publicKey.x963Representation).base64EncodedString(), "appId": appId, "previousCounter": 5,
        ]))
        #expect(replay.exitCode == 1)
        #expect(try fields(replay)["step"] as? String == "counter")
    }

    @Test("unusable input is an input error naming what is wrong, not a verdict", arguments: [
        ("not json", "JSON"),
        (#"{"keyId":"AA==","clientDataHash":"AA==","appId":"a"}"#, "attestation"),
        (#"{"attestation":"%%%","keyId":"AA==","clientDataHash":"AA==","appId":"a"}"#, "attestation"),
        (#"{"attestation":"AA==","keyId":"AA==","clientDataHash":"AA==","appId":"a","environment":"staging"}"#, "environment"),
        (#"{"attestation":"AA==","keyId":"AA==","clientDataHash":"AA==","appId":"a","at":"yesterday"}"#, "at"),
        (#"{"attestation":"AA==","keyId":7,"clientDataHash":"AA==","appId":"a"}"#, "keyId"),
    ])
    func unusableAttestationInput(text: String, named: String) async {
        await #expect {
            _ = try await AttestRunner.verifyAttestation(json: Data(text.utf8), rootsPEM: [], now: Date())
        } throws: { error in
            (error as? AttestInputError)?.description.contains(named) == true
        }
    }

    @Test("a public key that is not a P-256 point is unusable input")
    func unusablePublicKey() {
        #expect(throws: AttestInputError.self) {
            try AttestRunner.verifyAssertion(json: try json([
                "assertion": "AA==", "clientDataHash": "AA==", "publicKey": Data([4, 1, 2]).base64EncodedString(), "appId": "a",
                "previousCounter": 0,
            ]))
        }
    }

    @Test("the command line parses as documented")
    func commandLine() throws {
        let command = try SesameCommand.parseAsRoot(["attest", "verify", "--input", "in.json", "--root", "a.pem", "--root", "b.pem"])
        let verify = try #require(command as? AttestCommand.VerifyAttestation)
        #expect(verify.options.input == "in.json")
        #expect(verify.options.root == ["a.pem", "b.pem"])
        #expect(try SesameCommand.parseAsRoot(["attest", "verify-assertion"]) is AttestCommand.VerifyAssertion)
    }
}

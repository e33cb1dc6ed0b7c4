import AppAttest
import ArgumentParser
import Foundation
import SesameJSON
import SwiftASN1
import X509

/// What a verification printed and how the process ends.
struct AttestOutcome: Equatable {
    /// The one JSON line printed.
    var line: String
    /// 0 valid, 1 invalid.
    var exitCode: Int32

    func printAndExit() throws {
        print(line)
        if exitCode != 0 { throw ExitCode(exitCode) }
    }
}

/// The verification behind `sesame attest`: JSON in, one JSON line and an exit status out.
enum AttestRunner {
    /// Verifies an attestation described by `json`; `rootsPEM` adds trusted roots, `now` is the
    /// default verification time.
    static func verifyAttestation(json: Data, rootsPEM: [String], now: Date) async throws(AttestInputError) -> AttestOutcome {
        let input = try AttestInputParsing.decode(AttestationInput.self, from: json)
        var roots: [Certificate] = []
        for pem in rootsPEM {
            guard let root = try? Certificate(pemEncoded: pem) else { throw AttestInputError("a --root file is not a PEM certificate") }
            roots.append(root)
        }
        let attestation = try AttestInputParsing.base64(input.attestation, field: "attestation")
        let keyId = try AttestInputParsing.base64(input.keyId, field: "keyId")
        let clientDataHash = try AttestInputParsing.base64(input.clientDataHash, field: "clientDataHash")
        let time = try input.at.map { (text: String) throws(AttestInputError) in try AttestInputParsing.date(text, field: "at") } ?? now

        do {
            let verified = try await AppAttestVerifier(additionalRoots: roots).verifyAttestation(
                attestation, keyId: keyId, clientDataHash: clientDataHash, appId: input.appId,
                environment: input.environment, at: time)
            return AttestOutcome(
                line: jsonLine([
                    "valid": .bool(true), "environment": .string(verified.environment.rawValue),
                    "publicKey": .string(Data(verified.publicKey).base64EncodedString()),
                    "receipt": .string(Data(verified.receipt).base64EncodedString()), "counter": .integer(Int64(verified.counter)),
                ]),
                exitCode: 0)
        } catch {
            return invalid(error)
        }
    }

    /// Verifies an assertion described by `json`.
    static func verifyAssertion(json: Data) throws(AttestInputError) -> AttestOutcome {
        let input = try AttestInputParsing.decode(AssertionInput.self, from: json)
        let assertion = try AttestInputParsing.base64(input.assertion, field: "assertion")
        let clientDataHash = try AttestInputParsing.base64(input.clientDataHash, field: "clientDataHash")
        let publicKey = try AttestInputParsing.publicKey(input.publicKey)
        do {
            let counter = try AppAttestVerifier().verifyAssertion(
                assertion, clientDataHash: clientDataHash, publicKey: publicKey, appId: input.appId,
                previousCounter: input.previousCounter)
            return AttestOutcome(line: jsonLine(["valid": .bool(true), "counter": .integer(Int64(counter))]), exitCode: 0)
        } catch {
            return invalid(error)
        }
    }

    /// Reports unusable input on standard error and exits 2.
    static func exitUnusable(_ error: any Error) throws -> Never {
        FileHandle.standardError.write(Data("sesame attest: \(error)\n".utf8))
        throw ExitCode(2)
    }

    private static func invalid(_ error: AppAttestError) -> AttestOutcome {
        AttestOutcome(line: jsonLine(["valid": .bool(false), "step": .string(error.step.rawValue), "error": .string(error.reason)]), exitCode: 1)
    }

    private static func jsonLine(_ object: [String: JSONValue]) -> String {
        JSONDisplay.describe(JSONValue.object(object))
    }
}

import ArgumentParser
import Foundation

/// `sesame attest`: check App Attest data offline, exactly as the auth service does.
struct AttestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attest",
        abstract: "Verify App Attest attestations and assertions.",
        discussion: """
            Each subcommand reads one JSON object from --input or standard input and prints one JSON \
            line. Exit status: 0 valid, 1 invalid (the line names the failed step), 2 unusable input.
            """,
        subcommands: [VerifyAttestation.self, VerifyAssertion.self]
    )
}

/// Options both subcommands share.
struct AttestInputOptions: ParsableArguments {
    @Option(name: .long, help: "Read the JSON input from this file instead of standard input.")
    var input: String?

    @Option(name: .long, help: "A PEM file of a root certificate to trust besides Apple's (development only). Repeatable.")
    var root: [String] = []

    /// The input bytes, from the file or standard input.
    func readInput() throws(AttestInputError) -> Data {
        if let input {
            guard let data = FileManager.default.contents(atPath: input) else {
                throw AttestInputError("cannot read --input \(input)")
            }
            return data
        }
        return FileHandle.standardInput.readDataToEndOfFile()
    }

    /// The PEM text of each `--root` file.
    func readRoots() throws(AttestInputError) -> [String] {
        var roots: [String] = []
        for path in root {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw AttestInputError("cannot read --root \(path)")
            }
            roots.append(String(decoding: data, as: UTF8.self))
        }
        return roots
    }
}

extension AttestCommand {
    /// `sesame attest verify`.
    struct VerifyAttestation: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "verify",
            abstract: "Verify an attestation object from DCAppAttestService.attestKey.",
            discussion: """
                Input: {"attestation": b64, "keyId": b64, "clientDataHash": b64, "appId": "TEAMID.bundle.id", \
                "environment": "development"|"production" (optional), "at": ISO-8601 (optional, default now)}
                """
        )

        @OptionGroup var options: AttestInputOptions

        func run() async throws {
            let outcome: AttestOutcome
            do {
                outcome = try await AttestRunner.verifyAttestation(
                    json: try options.readInput(), rootsPEM: try options.readRoots(), now: Date())
            } catch {
                try AttestRunner.exitUnusable(error)
            }
            try outcome.printAndExit()
        }
    }

    /// `sesame attest verify-assertion`.
    struct VerifyAssertion: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "verify-assertion",
            abstract: "Verify an assertion from DCAppAttestService.generateAssertion.",
            discussion: """
                Input: {"assertion": b64, "clientDataHash": b64, "publicKey": PEM or b64 of the 65-byte X9.63 point, \
                "appId": "TEAMID.bundle.id", "previousCounter": n}
                """
        )

        @OptionGroup var options: AttestInputOptions

        func run() async throws {
            let outcome: AttestOutcome
            do {
                outcome = try AttestRunner.verifyAssertion(json: try options.readInput())
            } catch {
                try AttestRunner.exitUnusable(error)
            }
            try outcome.printAndExit()
        }
    }
}

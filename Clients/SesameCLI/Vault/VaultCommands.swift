import ArgumentParser
import Foundation
import SesameJSON
import SesameVault

/// The vault password, from `--vault-pass` or `SESAME_VAULT_PASS`.
struct VaultPasswordOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "The vault password. Prefer the SESAME_VAULT_PASS environment variable: a password typed on the command line lands in your shell history."
        ))
    var vaultPass: String?

    func password() throws(CLIFailure) -> String {
        guard let password = vaultPass ?? ProcessInfo.processInfo.environment["SESAME_VAULT_PASS"], !password.isEmpty else {
            throw CLIFailure("no vault password: set SESAME_VAULT_PASS (or pass --vault-pass)", exitCode: 2)
        }
        return password
    }
}

/// `sesame encrypt`.
struct EncryptCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "encrypt", abstract: "Encrypt a JSON config with a vault password (zero-knowledge), writing FILE.enc.")

    @Option(help: "The JSON config file.") var file: String
    @Option(help: "Where to write the envelope (default: FILE.enc).") var out: String?
    @Option(help: "Check the config against this JSON Schema file before sealing it.") var schema: String?
    @Option(
        help: "Check the config against the schemas the server attaches to this version pattern before sealing it (Sesame cannot check ciphertext).")
    var ver: String?
    @OptionGroup var vault: VaultPasswordOptions
    @OptionGroup var server: ServerOptions

    func run() async throws {
        try await reportingFailures {
            let plaintext = try readFile(file)
            guard case .object? = try? JSONDecoder().decode(JSONValue.self, from: plaintext) else {
                throw CLIFailure("\(file) is not a JSON object; Sesame configs are JSON objects", exitCode: 2)
            }
            // The server sees only ciphertext: its schemas are checked here, on the plaintext.
            try await requireMatch(file, schemaFile: schema, version: ver, server: server, failure: "; nothing was sealed")
            let destination = out ?? file + ".enc"
            let envelope = try VaultEnvelope.seal(plaintext, password: try vault.password()).encoded()
            guard FileManager.default.createFile(atPath: destination, contents: envelope, attributes: [.posixPermissions: 0o600]) else {
                throw CLIFailure("cannot write \(destination)", exitCode: 2)
            }
            Console.current.out("Encrypted \(file) → \(destination). Upload it with: sesame config upload --file \(destination) --ver '*'")
        }
    }
}

/// `sesame decrypt`.
struct DecryptCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decrypt", abstract: "Decrypt an envelope from 'sesame encrypt', to standard output or --out.")

    @Option(help: "The envelope file.") var file: String
    @Option(help: "Write the plaintext here instead of standard output.") var out: String?
    @OptionGroup var vault: VaultPasswordOptions

    func run() async throws {
        try await reportingFailures {
            let envelope: VaultEnvelope
            do {
                guard let decoded = try VaultEnvelope.decode(try readFile(file)) else {
                    throw CLIFailure("\(file) is not a Sesame vault envelope (no \"sesameVault\" field)", exitCode: 2)
                }
                envelope = decoded
            } catch let failure as VaultEnvelope.Failure {
                throw CLIFailure("\(file): \(failure)", exitCode: 2)
            }
            let plaintext: Data
            do {
                plaintext = try envelope.open(password: try vault.password())
            } catch {
                throw CLIFailure("\(file): \(error)", exitCode: 1)
            }
            if let out {
                guard FileManager.default.createFile(atPath: out, contents: plaintext, attributes: [.posixPermissions: 0o600]) else {
                    throw CLIFailure("cannot write \(out)", exitCode: 2)
                }
                Console.current.error("Decrypted \(file) → \(out).")
            } else {
                Console.current.out(String(decoding: plaintext, as: UTF8.self))
            }
        }
    }
}

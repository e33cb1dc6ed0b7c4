import ArgumentParser
import Foundation
import OpenAPIRuntime
import SesameJSON
import SesameVault

/// `sesame config upload` (alias `sesame upload`): publish a config file for a version pattern.
struct UploadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "upload", abstract: "Publish a JSON config file for a version pattern (a new revision).",
        discussion: "With --encrypt the file is encrypted here first (zero-knowledge): Sesame stores ciphertext it cannot read.")

    @OptionGroup var server: ServerOptions
    @Option(help: "The JSON config file (an object), or an envelope from 'sesame encrypt'.") var file: String
    @Option(help: "The version pattern: *, N.*, N.N.* or N.N.N.") var ver: String
    @Flag(help: "Encrypt the file with the vault password before uploading.") var encrypt = false
    @Option(
        name: .customLong("tier"),
        help: "KEY=TIER: the least tier that sees top-level KEY (unattested, debug, attested); keys not named need attested. Repeat per key.")
    var tiers: [String] = []
    @Option(help: "A staged rollout: the percentage of installs (below 100) that get this revision; the rest keep the pattern's current one.")
    var rollout: Double?
    @OptionGroup var vault: VaultPasswordOptions

    func run() async throws {
        try await reportingFailures {
            var document = try readFile(file)
            if encrypt {
                guard case .object? = try? JSONDecoder().decode(JSONValue.self, from: document) else {
                    throw CLIFailure("\(file) is not a JSON object; only JSON configs can be uploaded", exitCode: 2)
                }
                document = try VaultEnvelope.seal(document, password: try vault.password()).encoded()
            }
            guard let config = try? JSONDecoder().decode(JSONValue.self, from: document), case .object = config else {
                throw CLIFailure("\(file) is not a JSON object; only JSON configs can be uploaded", exitCode: 2)
            }
            let body = Operations.uploadConfig.Input.Body.jsonPayload(
                version: ver, config: config,
                tiers: tiers.isEmpty ? nil : .init(additionalProperties: try Self.parseTiers(tiers).mapValues { .init(stringLiteral: $0) }),
                rollout: rollout)
            let client = try server.client()
            let answer = try await client.call { try await $0.uploadConfig(body: .json(body)) }
            // With --json, standard output is the reply alone, for CI to parse.
            if server.printedReply(of: client) { return }
            var summary = client.message(or: "Published.")
            if case .ok(let published) = answer { summary += "\nPatterns now published: " + (try published.body.json.allPatterns).joined(separator: ", ") }
            Console.current.out(summary)
        }
    }
}

extension UploadCommand {
    /// `KEY=TIER` options as the upload's `tiers` object.
    static func parseTiers(_ options: [String]) throws(CLIFailure) -> [String: String] {
        var tiers: [String: String] = [:]
        for option in options {
            let parts = option.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, !parts[0].isEmpty, ["unattested", "debug", "attested"].contains(parts[1]) else {
                throw CLIFailure("--tier '\(option)' is not KEY=TIER with TIER one of unattested, debug, attested", exitCode: 2)
            }
            tiers[parts[0]] = parts[1]
        }
        return tiers
    }
}

/// `sesame config view`.
struct ConfigViewCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "view", abstract: "Show the config manifest: every published pattern.")

    @OptionGroup var server: ServerOptions

    /// `features=unattested, beta=debug`; `-` when the config is attested-only.
    static func lowerTiers(_ value: Components.Schemas.Tiers?) -> String {
        guard let tiers = value?.additionalProperties, !tiers.isEmpty else { return "-" }
        return tiers.sorted { $0.key < $1.key }.map { "\($0.key)=\(JSONDisplay.describe($0.value))" }.joined(separator: ", ")
    }

    func run() async throws {
        try await reportingFailures {
            let client = try server.client()
            let manifest = try await client.call { try await $0.getManifest().ok.body.json }
            if server.printedReply(of: client) { return }
            let patterns = manifest.patterns
            guard !patterns.isEmpty else {
                return Console.current.out("No config is published. Upload one with: sesame config upload --file config.json --ver '*'")
            }
            Console.current.out(Table.render(
                ["PATTERN", "REVISION", "BYTES", "ZERO-KNOWLEDGE", "LOWER TIERS", "UPDATED", "BY"],
                patterns.map { [
                    $0.pattern, text($0.revision), text($0.sizeBytes), $0.zeroKnowledge ? "yes" : "no", Self.lowerTiers($0.tiers), text($0.updatedAt),
                    text($0.updatedBy),
                ] }))
        }
    }
}

/// `sesame config delete`.
struct ConfigDeleteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete one version pattern (--ver) or, with --all, every pattern. History is kept.")

    @OptionGroup var server: ServerOptions
    @Option(help: "The version pattern to delete.") var ver: String?
    @Flag(help: "Delete every pattern: apps get no config until the next upload.") var all = false

    func validate() throws {
        guard (ver == nil) != !all else { throw ValidationError("give either --ver PATTERN or --all") }
    }

    func run() async throws {
        try await reportingFailures {
            let client = try server.client()
            _ = try await client.call { try await $0.deleteConfig(query: .init(version: ver)) }
            server.confirm(client, or: "Deleted.")
        }
    }
}

/// `sesame config history`.
struct ConfigHistoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "history", abstract: "List the revisions of a pattern (or of all).")

    @OptionGroup var server: ServerOptions
    @Option(help: "Only this version pattern.") var ver: String?

    func run() async throws {
        try await reportingFailures {
            let client = try server.client()
            let revisions = try await client.call { try await $0.getHistory(query: .init(version: ver)).ok.body.json.revisions }
            if server.printedReply(of: client) { return }
            guard !revisions.isEmpty else { return Console.current.out("No revisions.") }
            Console.current.out(Table.render(
                ["PATTERN", "REVISION", "ACTION", "BYTES", "SHA-256", "AT", "BY"],
                revisions.map { revision in
                    var action = revision.action
                    if let from = revision.restoredFrom { action += " of \(from)" }
                    return [
                        revision.pattern, text(revision.revision), action, text(revision.sizeBytes), String(text(revision.sha256).prefix(12)),
                        text(revision.createdAt), text(revision.createdBy),
                    ]
                }))
        }
    }
}

/// `sesame config rollback`.
struct ConfigRollbackCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rollback", abstract: "Publish an earlier revision's exact config again, as a new revision.")

    @OptionGroup var server: ServerOptions
    @Option(help: "The version pattern.") var ver: String
    @Option(help: "The revision to restore (see config history).") var revision: Int64

    func run() async throws {
        try await reportingFailures {
            let client = try server.client()
            _ = try await client.call { try await $0.rollback(body: .json(.init(version: ver, revision: revision))) }
            server.confirm(client, or: "Rolled back.")
        }
    }
}

/// `sesame config resolve`.
struct ConfigResolveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resolve", abstract: "Show which pattern and revision an app at a version gets (a dry run).")

    @OptionGroup var server: ServerOptions
    @Option(name: .customLong("app-version"), help: "The app version, such as 2.1.3.") var appVersion: String
    @Option(help: "A device's key id (see 'sesame devices list'): whether a staged rollout includes it.") var install: String?

    func run() async throws {
        try await reportingFailures {
            let client = try server.client()
            let answer = try await client.call { try await $0.resolveConfig(query: .init(version: appVersion, install: install)).ok.body.json }
            if server.printedReply(of: client) { return }
            switch JSONDisplay.describe(answer.outcome) {
            case "disabled":
                Console.current.out("Version \(appVersion) is switched off: apps show \"\(text(answer.reason))\".")
            case "revoked":
                Console.current.out("Version \(appVersion) is under an emergency revocation: apps must attest again.")
            default:
                let refresh = answer.refreshAfter.map { " (apps refresh within \($0) s: an emergency revocation is in its window)" } ?? ""
                let override = JSONDisplay.describe(answer.decidedBy) == "deviceOverride" ? ", by this device's override" : ""
                Console.current.out(
                    "Version \(appVersion) gets pattern '\(text(answer.matchedPattern))', revision \(text(answer.revision))\(refresh)\(override)\(Self.rolloutNote(answer.rollout)).")
            }
        }
    }
}

extension ConfigResolveCommand {
    /// What the answer's rollout means for the install asked about (or for installs outside it).
    static func rolloutNote(_ rollout: Operations.resolveConfig.Output.Ok.Body.jsonPayload.rolloutPayload?) -> String {
        guard let rollout else { return "" }
        let share = "a staged rollout at \(text(rollout.percent)) %\(rollout.paused ? ", paused" : "")"
        switch rollout.included {
        case true?: return ", as this install is in \(share)"
        case false?: return ", as this install is outside \(share)"
        case nil: return " for installs outside \(share) (name one with --install to place it)"
        }
    }
}

/// The contents of `path`, or a failure naming it.
func readFile(_ path: String) throws(CLIFailure) -> Data {
    guard let data = FileManager.default.contents(atPath: path) else { throw CLIFailure("cannot read \(path)", exitCode: 2) }
    return data
}

/// A field as table text: `-` when absent.
func text(_ value: String?) -> String { value ?? "-" }

/// A whole number as table text: `-` when absent.
func text(_ value: (some BinaryInteger)?) -> String { value.map { "\($0)" } ?? "-" }

/// A time as the server writes it (ISO 8601, to the second): `-` when absent.
func text(_ value: Date?) -> String { value.map { $0.formatted(.iso8601) } ?? "-" }

/// A number as JSON wrote it (`5`, `12.5`): `-` when absent.
func text(_ value: Double?) -> String {
    guard let value else { return "-" }
    return value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : "\(value)"
}

/// Plain-text columns.
enum Table {
    static func render(_ header: [String], _ rows: [[String]]) -> String {
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
        return all.map { row in
            row.enumerated().map { $1.padding(toLength: widths[$0], withPad: " ", startingAt: 0) }.joined(separator: "  ")
                .trimmingCharacters(in: .whitespaces)
        }.joined(separator: "\n")
    }
}

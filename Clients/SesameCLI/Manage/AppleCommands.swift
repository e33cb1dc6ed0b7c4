import ArgumentParser
import Foundation

/// The app's Apple DeviceCheck key as a table: its id, team, who set it, and Apple's last verdict.
func describe(_ credentials: Components.Schemas.AppleCredentials) -> String {
    let verdict = credentials.check.map { "\($0.outcome.rawValue) at \(text($0.checkedAt)): \($0.message)" } ?? "not checked"
    return Table.render(
        ["KEY ID", "TEAM", "SET BY", "SET AT", "APPLE"], [[credentials.keyId, credentials.teamId, credentials.setBy, text(credentials.setAt), verdict]])
}

/// `sesame apple set`.
struct AppleSetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Set the app's DeviceCheck key (the .p8 file from Apple's developer account); Apple is asked at once whether it accepts it.",
        discussion: "The key is sealed by Sesame and never shown again; the team is the app's.")

    @OptionGroup var server: ServerOptions
    @Option(help: "The key's 10-character id (from the file name AuthKey_<ID>.p8).") var keyId: String
    @Option(help: "The .p8 file.") var privateKeyFile: String

    func run() async throws {
        try await reportingFailures {
            let pem = String(decoding: try readFile(privateKeyFile), as: UTF8.self)
            let client = try server.client()
            let answer = try await client.call {
                try await $0.setAppleCredentials(body: .json(.init(keyId: keyId, privateKey: pem))).ok.body.json
            }
            if server.printedReply(of: client) { return }
            Console.current.out(describe(answer.credentials))
            Console.current.error(answer.message)
        }
    }
}

/// `sesame apple show`.
struct AppleShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Show the app's DeviceCheck key id (never the key) and what Apple made of it when last asked.")

    @OptionGroup var server: ServerOptions

    func run() async throws {
        try await reportingFailures {
            let client = try server.client()
            let credentials = try await client.call { try await $0.getAppleCredentials().ok.body.json }
            if server.printedReply(of: client) { return }
            Console.current.out(describe(credentials))
        }
    }
}

/// `sesame apple check`.
struct AppleCheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check", abstract: "Ask Apple again whether it accepts the app's DeviceCheck key (exit 1 unless it does).")

    @OptionGroup var server: ServerOptions

    func run() async throws {
        try await reportingFailures {
            let client = try server.client()
            let credentials = try await client.call { try await $0.checkAppleCredentials().ok.body.json }
            if server.printedReply(of: client) { return }
            Console.current.out(describe(credentials))
            guard credentials.check?.outcome == .accepted else {
                throw CLIFailure("Apple did not accept the key: \(credentials.check?.message ?? "not checked")", exitCode: 1)
            }
        }
    }
}

/// `sesame apple remove`.
struct AppleRemoveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove", abstract: "Remove the app's DeviceCheck key: Sesame then asks Apple nothing for the app.")

    @OptionGroup var server: ServerOptions

    func run() async throws {
        try await reportingFailures {
            let client = try server.client()
            _ = try await client.call { try await $0.removeAppleCredentials().ok.body.json }
            server.confirm(client, or: "Removed.")
        }
    }
}

import ArgumentParser
import Foundation

/// `sesame debug-tokens create`.
struct DebugTokensCreateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create",
        abstract: "Create a debug token: the Simulator, CI or a developer's device gets debug-tier tokens with it instead of App Attest.",
        discussion: """
            The token is printed once on standard output (Sesame keeps only its hash), so \
            `export SESAME_DEBUG_TOKEN=$(sesame debug-tokens create --name ci --ttl 7d)` works. Debug-tier \
            callers see only the config keys an upload opened to 'debug' or 'unattested'; every use is audited.
            """)

    @OptionGroup var server: ServerOptions
    @Option(help: "A name that says who holds it, such as 'ci' or 'simulator-anna' (the audit log shows it).") var name: String
    @Option(help: "How long it lives: seconds, or 12h, 7d, … at most 30d.") var ttl = "7d"

    func run() async throws {
        try await reportingFailures {
            let client = try server.client()
            let created = try await client.call {
                try await $0.createDebugToken(body: .json(.init(name: name, ttl: .case2(ttl)))).ok.body.json
            }
            if server.printedReply(of: client) { return }
            Console.current.out(created.debugToken)
            Console.current.error(created.message)
        }
    }
}

/// `sesame debug-tokens list`.
struct DebugTokensListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List the app's debug tokens (never the tokens themselves): expiry, revocation, uses.")

    @OptionGroup var server: ServerOptions

    func run() async throws {
        try await reportingFailures {
            let client = try server.client()
            let tokens = try await client.call { try await $0.listDebugTokens().ok.body.json.tokens }
            if server.printedReply(of: client) { return }
            guard !tokens.isEmpty else { return Console.current.out("No debug tokens. Create one with: sesame debug-tokens create --name ci") }
            Console.current.out(
                Table.render(
                    ["NAME", "ID", "EXPIRES", "REVOKED", "USES", "LAST USED"],
                    tokens.map { [$0.name, $0.tokenId, text($0.expiresAt), text($0.revokedAt), text($0.uses), text($0.lastUsedAt)] }))
        }
    }
}

/// `sesame debug-tokens revoke`.
struct DebugTokensRevokeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revoke",
        abstract: "Revoke a debug token by name or id: it is exchanged no more, and what it earned expires with the access token.")

    @OptionGroup var server: ServerOptions
    @Argument(help: "The token's name or id (from debug-tokens list).") var nameOrID: String

    func run() async throws {
        try await reportingFailures {
            let client = try server.client()
            _ = try await client.call { try await $0.revokeDebugToken(path: .init(nameOrID: nameOrID)) }
            server.confirm(client, or: "Revoked.")
        }
    }
}

import ArgumentParser
import Foundation

/// `sesame backend-keys create`.
struct BackendKeysCreateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create",
        abstract: "Create a backend key: your API's backend sends it to Sesame to consume single-use tokens and check assertions.",
        discussion: """
            The key is printed once on standard output (Sesame keeps only its hash), so \
            `sesame backend-keys create --name payments-api > backend.key` works. It can only verify \
            for this app: it manages nothing.
            """)

    @OptionGroup var server: ServerOptions
    @Option(help: "A name that says which backend holds it, such as 'payments-api' (the audit log shows it).") var name: String
    @Option(help: "Bind the key to one of the policy's apiAudiences: it then consumes only tokens issued for it.") var audience: String?

    func run() async throws {
        try await reportingFailures {
            let client = try server.client()
            let created = try await client.call { try await $0.createBackendKey(body: .json(.init(name: name, audience: audience))).ok.body.json }
            if server.printedReply(of: client) { return }
            Console.current.out(created.backendKey)
            Console.current.error(created.message)
        }
    }
}

/// `sesame backend-keys list`.
struct BackendKeysListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List the app's backend keys (never the keys themselves): creation, last use, revocation.")

    @OptionGroup var server: ServerOptions

    func run() async throws {
        try await reportingFailures {
            let client = try server.client()
            let keys = try await client.call { try await $0.listBackendKeys().ok.body.json.keys }
            if server.printedReply(of: client) { return }
            guard !keys.isEmpty else { return Console.current.out("No backend keys. Create one with: sesame backend-keys create --name payments-api") }
            Console.current.out(
                Table.render(
                    ["NAME", "ID", "KEY", "AUDIENCE", "CREATED", "LAST USED", "REVOKED"],
                    keys.map { [$0.name, $0.keyId, $0.hint, text($0.audience), text($0.createdAt), text($0.lastUsedAt), text($0.revokedAt)] }))
        }
    }
}

/// `sesame backend-keys revoke KEY-ID`.
struct BackendKeysRevokeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revoke", abstract: "Revoke a backend key by id: Sesame refuses it from now on, everywhere.")

    @OptionGroup var server: ServerOptions
    @Argument(help: "The key's id (from backend-keys list).") var keyID: String

    func run() async throws {
        try await reportingFailures {
            guard UUID(uuidString: keyID) != nil else { throw CLIFailure("'\(keyID)' is not a key id (see sesame backend-keys list)", exitCode: 2) }
            let client = try server.client()
            _ = try await client.call { try await $0.revokeBackendKey(path: .init(keyId: keyID)) }
            server.confirm(client, or: "Revoked.")
        }
    }
}

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
            var body: [String: Any] = ["name": name]
            if let audience { body["audience"] = audience }
            let reply = try await server.client().post("backend-keys", body)
            if server.json { return Console.current.out(String(decoding: reply.raw, as: UTF8.self)) }
            Console.current.out(text(reply.object["backendKey"]))
            Console.current.error(reply.message(or: "Created."))
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
            let reply = try await server.client().get("backend-keys")
            if server.json { return Console.current.out(String(decoding: reply.raw, as: UTF8.self)) }
            let keys = reply.object["keys"] as? [[String: Any]] ?? []
            guard !keys.isEmpty else { return Console.current.out("No backend keys. Create one with: sesame backend-keys create --name payments-api") }
            Console.current.out(
                Table.render(
                    ["NAME", "ID", "KEY", "AUDIENCE", "CREATED", "LAST USED", "REVOKED"],
                    keys.map {
                        [
                            text($0["name"]), text($0["keyId"]), text($0["hint"]), text($0["audience"]), text($0["createdAt"]),
                            text($0["lastUsedAt"]), text($0["revokedAt"]),
                        ]
                    }))
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
            let reply = try await server.client().delete("backend-keys/" + keyID, query: [:])
            server.show(reply) { $0.message(or: "Revoked.") }
        }
    }
}

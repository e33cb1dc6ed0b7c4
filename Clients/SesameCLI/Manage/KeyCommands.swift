import ArgumentParser
import Foundation

/// `sesame keys create`.
struct KeysCreateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create", abstract: "Create a provisioning key (the first key of a new app needs the operator token).",
        discussion: "The new key is printed once on standard output; Sesame keeps only its hash.")

    @OptionGroup var server: ServerOptions
    @Option(help: "The app's 10-character Apple team id.") var teamId: String
    @Option(help: "The app's bundle id.") var bundleId: String
    @Option(help: "A name to recognise the key by, such as 'ci'.") var name: String?
    @Flag(help: "Authenticate with SESAME_OPERATOR_TOKEN instead of a provisioning key (to register a new app).")
    var asOperator = false

    func run() async throws {
        try await reportingFailures {
            var credential: String?
            if asOperator {
                guard let token = server.environment["SESAME_OPERATOR_TOKEN"], !token.isEmpty else {
                    throw CLIFailure("--as-operator needs SESAME_OPERATOR_TOKEN in the environment", exitCode: 2)
                }
                credential = token
            }
            let client = try server.client(credential: credential)
            let answer = try await client.call { try await $0.createKey(body: .json(.init(teamId: teamId, bundleId: bundleId, keyName: name))) }
            if server.printedReply(of: client) { return }
            // The key alone on standard output, so `export SESAME_KEY=$(sesame keys create …)` works; a
            // key held for a second person's approval is not made yet.
            if case .ok(let created) = answer { Console.current.out(try created.body.json.key) }
            Console.current.error(client.message(or: ""))
        }
    }
}

/// `sesame keys revoke`.
struct KeysRevokeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revoke", abstract: "Revoke a provisioning key of your app.",
        discussion: """
            Name the key by its id (from 'sesame keys list'), which is not a secret. To name it by the \
            key itself without it landing in your shell history, pipe it: echo "$OLD_KEY" | sesame keys revoke -
            """)

    @OptionGroup var server: ServerOptions
    @Argument(help: "The key's id, or '-' to read the key from standard input (where it is read from when no argument is given and input is piped).")
    var target: String?

    func run() async throws {
        try await reportingFailures {
            let client = try server.client()
            let body = try revocationBody()
            _ = try await client.call { try await $0.revokeKey(body: .json(body)) }
            server.confirm(client, or: "Revoked.")
        }
    }

    /// `{"keyId": …}` for an id, `{"key": …}` for the key itself.
    func revocationBody() throws(CLIFailure) -> Operations.revokeKey.Input.Body.jsonPayload {
        var named = target
        if named == nil || named == "-" {
            // Waiting on a terminal would look like a hang: `keys revoke --key OLD` is a mistake to name.
            guard named == "-" || isatty(FileHandle.standardInput.fileDescriptor) == 0 else {
                throw CLIFailure("name the key to revoke: sesame keys revoke KEY-ID (ids from 'sesame keys list'), or pipe the key to 'sesame keys revoke -'; --key is your own credential", exitCode: 2)
            }
            named = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        guard let named, !named.isEmpty else { throw CLIFailure("no key to revoke was given", exitCode: 2) }
        return UUID(uuidString: named) != nil ? .init(keyId: named) : .init(key: named)
    }
}

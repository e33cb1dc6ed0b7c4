import ArgumentParser
import Foundation

/// `sesame keys:create`.
struct KeysCreateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys:create", abstract: "Create a provisioning key (the first key of a new app needs the operator token).",
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
            var body: [String: Any] = ["teamId": teamId, "bundleId": bundleId]
            body["keyName"] = name
            let reply = try await server.client(credential: credential).post("keys/create", body)
            if server.json { return Console.current.out(String(decoding: reply.raw, as: UTF8.self)) }
            // The key alone on standard output, so `export SESAME_KEY=$(sesame keys:create …)` works.
            Console.current.out(text(reply.object["key"]))
            Console.current.error(reply.object["message"] as? String ?? "")
        }
    }
}

/// `sesame keys:revoke`.
struct KeysRevokeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys:revoke", abstract: "Revoke a provisioning key of your app.",
        discussion: "The key to revoke is read from standard input, so it stays out of your shell history: echo \"$OLD_KEY\" | sesame keys:revoke")

    @OptionGroup var server: ServerOptions

    func run() async throws {
        try await reportingFailures {
            let target = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            guard !target.isEmpty else { throw CLIFailure("give the key to revoke on standard input", exitCode: 2) }
            try await revoke(target)
        }
    }

    func revoke(_ target: String) async throws {
        let reply = try await server.client().post("keys/revoke", ["key": target])
        server.show(reply) { $0.message(or: "Revoked.") }
    }
}

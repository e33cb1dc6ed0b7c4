import ArgumentParser
import Foundation

/// `sesame policy view`.
struct PolicyViewCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "view",
        abstract: "Show the app's security policy: development keys, assertions on refresh, debug tokens, unattested devices, tiers, user identity.")

    @OptionGroup var server: ServerOptions

    func run() async throws {
        try await reportingFailures {
            let reply = try await server.client().get("policy")
            if server.json { return Console.current.out(String(decoding: reply.raw, as: UTF8.self)) }
            let policy = reply.object["policy"] as? [String: Any] ?? [:]
            Console.current.out(Table.render(["FIELD", "VALUE"], policy.keys.sorted().map { [$0, JSONDisplay.describe(policy[$0])] }))
        }
    }
}

/// `sesame policy set`.
struct PolicySetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set", abstract: "Change fields of the app's security policy; the others keep their values.",
        discussion: """
            Each change is FIELD=VALUE, the value as JSON (true, 100000, "text", {"issuer": …}) or a bare word \
            taken as text: sesame policy set admitUnattested=true blobTier=debug allowDebugTokensInProduction=false
            """)

    @OptionGroup var server: ServerOptions
    @Argument(help: "FIELD=VALUE changes.") var changes: [String]

    func run() async throws {
        try await reportingFailures {
            guard !changes.isEmpty else { throw CLIFailure("name at least one change, such as admitUnattested=true", exitCode: 2) }
            let client = try server.client()
            var policy = try await client.get("policy").object["policy"] as? [String: Any] ?? [:]
            for change in changes {
                let parts = change.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2, !parts[0].isEmpty else { throw CLIFailure("'\(change)' is not FIELD=VALUE", exitCode: 2) }
                policy[parts[0]] = JSONDisplay.parse(parts[1])
            }
            let reply = try await client.put("policy", data: try JSONSerialization.data(withJSONObject: policy), contentType: "application/json")
            server.show(reply) { $0.message(or: "Policy updated.") }
        }
    }
}

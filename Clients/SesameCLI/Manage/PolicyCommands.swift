import ArgumentParser
import Foundation
import SesameJSON

/// `sesame policy view`.
struct PolicyViewCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "view",
        abstract: "Show the app's security policy: development keys, assertions on refresh, debug tokens, unattested devices, tiers, user identity.")

    @OptionGroup var server: ServerOptions

    func run() async throws {
        try await reportingFailures {
            let client = try server.client()
            let policy = try await client.call { try await $0.getPolicy().ok.body.json.policy }
            if server.printedReply(of: client) { return }
            guard case .object(let fields) = JSONDisplay.value(policy) else { return }
            Console.current.out(Table.render(["FIELD", "VALUE"], fields.keys.sorted().map { [$0, JSONDisplay.describe(fields[$0])] }))
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
            let current = try await client.call { try await $0.getPolicy().ok.body.json.policy }
            guard case .object(var fields) = JSONDisplay.value(current) else { throw CLIFailure("the server's policy could not be read", exitCode: 2) }
            for change in changes {
                let parts = change.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2, !parts[0].isEmpty else { throw CLIFailure("'\(change)' is not FIELD=VALUE", exitCode: 2) }
                guard Components.Schemas.Policy.CodingKeys(rawValue: parts[0]) != nil else {
                    throw CLIFailure("'\(parts[0])' is not a policy field (see sesame policy view)", exitCode: 2)
                }
                fields[parts[0]] = JSONDisplay.parse(parts[1])
            }
            let policy: Components.Schemas.Policy
            do {
                policy = try JSONDecoder().decode(Components.Schemas.Policy.self, from: JSONEncoder().encode(JSONValue.object(fields)))
            } catch {
                throw CLIFailure("the changed policy is not one Sesame takes (\(error))", exitCode: 2)
            }
            _ = try await client.call { try await $0.setPolicy(body: .json(policy)) }
            server.confirm(client, or: "Policy updated.")
        }
    }
}

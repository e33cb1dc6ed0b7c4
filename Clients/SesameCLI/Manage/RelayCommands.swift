import ArgumentParser
import Foundation
import OpenAPIRuntime

/// `sesame relays set`.
struct RelaysSetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Make or change an attested relay: the upstream, the calls the app may make, the headers Sesame injects.",
        discussion: """
            The injected headers (the secrets) are read from a JSON file, {"Authorization": "Bearer sk-…"}, never from the \
            command line (a shell keeps its history); '-' reads standard input. Left out, a change keeps the headers the relay has.
            """)

    @OptionGroup var server: ServerOptions
    @Argument(help: "The relay's name (1 to 64 of a-z, 0-9, -).") var name: String
    @Option(help: "The upstream's https origin, with a base path at most.") var upstream: String
    @Option(name: .customLong("method"), help: "A method the app may call (repeat it).") var methods: [String] = ["POST"]
    @Option(name: .customLong("path"), help: "A path pattern the app may call: literals, * for one segment, a final ** (repeat it).") var paths: [String]
    @Option(name: .customLong("headers-file"), help: "A JSON file of the headers to inject ('-': standard input).") var headersFile: String?
    @Option(name: .customLong("least-tier"), help: "attested (default), debug or unattested.") var leastTier: String?
    @Option(help: "none (default), limitedUseToken or assertion.") var proof: String?
    @Option(name: .customLong("per-install-per-minute"), help: "A quota of calls per install per minute.") var perInstallPerMinute: Int?
    @Option(name: .customLong("per-install-per-day"), help: "A quota of calls per install per day.") var perInstallPerDay: Int?
    @Option(name: .customLong("per-app-per-day"), help: "A quota of calls per app per day.") var perAppPerDay: Int?
    @Option(name: .customLong("timeout"), help: "The whole call's deadline in seconds (default 60).") var timeoutSeconds: Int?

    func run() async throws {
        try await reportingFailures {
            typealias Request = Components.Schemas.RelayRequest
            let methods = try methods.map { method throws(CLIFailure) -> Request.methodsPayloadPayload in
                guard let value = Request.methodsPayloadPayload(rawValue: method.uppercased()) else {
                    throw CLIFailure("'\(method)' is not a method a relay allows (GET, POST, PUT, PATCH, DELETE)", exitCode: 2)
                }
                return value
            }
            let tier = try leastTier.map { tier throws(CLIFailure) -> Request.leastTierPayload in
                guard let value = Request.leastTierPayload(rawValue: tier) else { throw CLIFailure("'\(tier)' is not a tier", exitCode: 2) }
                return value
            }
            let proofValue = try proof.map { proof throws(CLIFailure) -> Request.proofPayload in
                guard let value = Request.proofPayload(rawValue: proof) else { throw CLIFailure("'\(proof)' is not a proof", exitCode: 2) }
                return value
            }
            let headers = try headersFile.map { path throws(CLIFailure) -> Request.headersPayload in
                let data: Data
                do {
                    data = path == "-" ? FileHandle.standardInput.readDataToEndOfFile() : try Data(contentsOf: URL(fileURLWithPath: path))
                } catch {
                    throw CLIFailure("cannot read \(path)", exitCode: 2)
                }
                guard let object = try? JSONDecoder().decode([String: String].self, from: data) else {
                    throw CLIFailure("\(path) is not a JSON object of header names and string values", exitCode: 2)
                }
                return Request.headersPayload(additionalProperties: object)
            }
            let body = Request(
                upstream: upstream, methods: methods, paths: paths, headers: headers, leastTier: tier, proof: proofValue,
                timeoutSeconds: timeoutSeconds, perInstallPerMinute: perInstallPerMinute, perInstallPerDay: perInstallPerDay,
                perAppPerDay: perAppPerDay)
            let client = try server.client()
            // 200, or 202 when the app's policy guards relays: either says what happened in its message.
            _ = try await client.call { try await $0.setRelay(path: .init(name: name), body: .json(body)) }
            server.confirm(client, or: "Done.")
        }
    }
}

/// `sesame relays list`.
struct RelaysListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List the app's attested relays (the injected headers by name only).")

    @OptionGroup var server: ServerOptions

    func run() async throws {
        try await reportingFailures {
            let client = try server.client()
            let relays = try await client.call { try await $0.listRelays().ok.body.json.relays }
            if server.printedReply(of: client) { return }
            guard !relays.isEmpty else { return Console.current.out("No relay yet.") }
            Console.current.out(
                Table.render(
                    ["NAME", "UPSTREAM", "METHODS", "PATHS", "HEADERS", "LEAST TIER", "PROOF", "PER INSTALL/MIN", "PER APP/DAY"],
                    relays.map {
                        [
                            $0.name, $0.upstream, $0.methods.joined(separator: ","), $0.paths.joined(separator: " "), $0.headerNames.joined(separator: ","),
                            $0.leastTier.rawValue, $0.proof.rawValue, text($0.perInstallPerMinute), text($0.perAppPerDay),
                        ]
                    }))
        }
    }
}

/// `sesame relays remove`.
struct RelaysRemoveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "remove", abstract: "Remove an attested relay: its calls are refused from then on.")

    @OptionGroup var server: ServerOptions
    @Argument(help: "The relay's name.") var name: String

    func run() async throws {
        try await reportingFailures {
            let client = try server.client()
            _ = try await client.call { try await $0.removeRelay(path: .init(name: name)) }
            server.confirm(client, or: "Removed.")
        }
    }
}

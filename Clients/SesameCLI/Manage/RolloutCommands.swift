import ArgumentParser
import Foundation

/// `sesame config rollout ACTION --ver PATTERN [--percent N]`: steer a staged rollout begun with
/// `sesame config upload --rollout N`.
struct ConfigRolloutCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rollout", abstract: "Widen, pause, resume, complete or roll back a pattern's staged rollout.",
        discussion: """
            widen --percent N: more installs get the revision (those that have it keep it).
            pause: every install gets the previous config until resume, which gives the same installs the revision again.
            complete: every install gets the revision. rollback: every install gets the previous config again, as a new revision.
            """)

    enum Action: String, ExpressibleByArgument, CaseIterable {
        case widen, pause, resume, complete, rollback
    }

    @OptionGroup var server: ServerOptions
    @Argument(help: "widen, pause, resume, complete or rollback.") var action: Action
    @Option(help: "The version pattern whose rollout to change.") var ver: String
    @Option(help: "For widen: the new percentage of installs (0 to 100, in hundredths).") var percent: Double?

    func validate() throws {
        if action == .widen, percent == nil { throw ValidationError("widen needs --percent N") }
        if action != .widen, percent != nil { throw ValidationError("--percent goes with widen only") }
    }

    func run() async throws {
        try await reportingFailures {
            var body: [String: Any] = ["version": ver, "action": action.rawValue]
            if let percent { body["percent"] = percent }
            let reply = try await server.client().post("config/rollout", body)
            server.show(reply) { $0.message(or: "Done.") }
        }
    }
}

/// `sesame config rollouts [--ver PATTERN]`.
struct ConfigRolloutsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "rollouts", abstract: "List the app's staged rollouts, newest first.")

    @OptionGroup var server: ServerOptions
    @Option(help: "Only this version pattern.") var ver: String?

    func run() async throws {
        try await reportingFailures {
            let reply = try await server.client().get("config/rollouts", query: ver.map { ["version": $0] } ?? [:])
            if server.json { return Console.current.out(String(decoding: reply.raw, as: UTF8.self)) }
            let rollouts = reply.object["rollouts"] as? [[String: Any]] ?? []
            guard !rollouts.isEmpty else {
                return Console.current.out("No staged rollouts. Start one with: sesame config upload --file config.json --ver '2.*' --rollout 5")
            }
            Console.current.out(Table.render(
                ["PATTERN", "REVISION", "PREVIOUS", "PERCENT", "STATE", "UPDATED", "ID"],
                rollouts.map { [
                    text($0["pattern"]), text($0["revision"]), text($0["previousRevision"]), text($0["percent"]), text($0["state"]),
                    text($0["updatedAt"]), text($0["id"]),
                ] }))
        }
    }
}

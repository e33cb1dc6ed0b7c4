import ArgumentParser
import Foundation
import OpenAPIRuntime

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

    /// The document's actions (`widen`, `pause`, `resume`, `complete`, `rollback`).
    typealias Action = Operations.changeRollout.Input.Body.jsonPayload.actionPayload

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
            let client = try server.client()
            _ = try await client.call {
                try await $0.changeRollout(body: .json(.init(version: ver, action: action, percent: percent)))
            }
            server.confirm(client, or: "Done.")
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
            let client = try server.client()
            let rollouts = try await client.call { try await $0.listRollouts(query: .init(version: ver)).ok.body.json.rollouts }
            if server.printedReply(of: client) { return }
            guard !rollouts.isEmpty else {
                return Console.current.out("No staged rollouts. Start one with: sesame config upload --file config.json --ver '2.*' --rollout 5")
            }
            Console.current.out(Table.render(
                ["PATTERN", "REVISION", "PREVIOUS", "PERCENT", "STATE", "UPDATED", "ID"],
                rollouts.map { [
                    $0.pattern, text($0.revision), text($0.previousRevision), text($0.percent), JSONDisplay.describe($0.state), text($0.updatedAt), $0.id,
                ] }))
        }
    }
}

/// `sesame config override set|remove …` and `sesame config overrides`: a tester's device gets a
/// chosen revision.
struct ConfigOverrideCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "override", abstract: "Give one device (its key id) a chosen revision of a pattern, or take it back.",
        discussion: "set --ver P --install KEYID --revision N --label NAME; remove --ver P --install KEYID. Find a device's key id with 'sesame devices list'.")

    enum Action: String, ExpressibleByArgument, CaseIterable {
        case set, remove
    }

    @OptionGroup var server: ServerOptions
    @Argument(help: "set or remove.") var action: Action
    @Option(help: "The version pattern.") var ver: String
    @Option(help: "The device's key id (base64url), as 'sesame devices list' shows it.") var install: String
    @Option(help: "For set: the revision the device gets (see config history).") var revision: Int64?
    @Option(help: "For set: whose device it is, such as \"Ana's iPhone\".") var label: String?

    func validate() throws {
        if action == .set, revision == nil || label == nil { throw ValidationError("set needs --revision N and --label NAME") }
    }

    func run() async throws {
        try await reportingFailures {
            let client = try server.client()
            _ = try await client.call { api in
                switch action {
                case .set:
                    _ = try await api.setOverride(body: .json(.init(version: ver, install: install, revision: revision ?? 0, label: label ?? "")))
                case .remove:
                    _ = try await api.removeOverride(query: .init(version: ver, install: install))
                }
            }
            server.confirm(client, or: "Done.")
        }
    }
}

/// `sesame config overrides`.
struct ConfigOverridesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "overrides", abstract: "List the app's device overrides.")

    @OptionGroup var server: ServerOptions

    func run() async throws {
        try await reportingFailures {
            let client = try server.client()
            let overrides = try await client.call { try await $0.listOverrides().ok.body.json.overrides }
            if server.printedReply(of: client) { return }
            guard !overrides.isEmpty else { return Console.current.out("No device overrides.") }
            Console.current.out(Table.render(
                ["PATTERN", "REVISION", "LABEL", "INSTALL", "SINCE"],
                overrides.map { [$0.pattern, text($0.revision), $0.label, $0.install, text($0.createdAt)] }))
        }
    }
}

extension ConfigRolloutCommand.Action: ExpressibleByArgument {}

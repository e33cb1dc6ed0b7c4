import ArgumentParser
import Foundation

/// `sesame`: the command developers and CI run.
public struct SesameCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "sesame",
        abstract: "Sesame: ship an iOS app with no secrets inside.",
        discussion: """
            Commands that talk to Sesame read the server from --url or SESAME_URL and the provisioning \
            key from SESAME_KEY (or --key). The seed's forms are aliases: `sesame config:view` is \
            `sesame config view`, `sesame upload` is `sesame config upload`. Exit status: 0 done, \
            1 refused (by the server, or a wrong vault password), 2 the command could not be carried \
            out (bad input, file, network).
            """,
        subcommands: [
            ConfigGroup.self, KeysGroup.self, BackendKeysGroup.self, DevicesGroup.self, PinsGroup.self, DebugTokensGroup.self, PolicyGroup.self,
            BlobGroup.self, AuditGroup.self, WebhooksGroup.self, RelaysGroup.self, ChangesGroup.self, AppleGroup.self,
            KillSwitchCommand.self, RevokeCommand.self, EncryptCommand.self, DecryptCommand.self, AttestCommand.self,
        ]
    )

    public init() {}
}

extension SesameCommand {
    /// Parses and runs the command line, ending with the documented statuses: 0 done, 1 refused,
    /// 2 anything that could not be carried out (usage errors included, where ArgumentParser would
    /// use 64).
    public static func runAndExit(_ arguments: [String]? = nil) async -> Never {
        do {
            var command = try parse(commandLine: arguments ?? Array(CommandLine.arguments.dropFirst()))
            if var asynchronous = command as? any AsyncParsableCommand {
                try await asynchronous.run()
            } else {
                try command.run()
            }
            exit(withError: nil)
        } catch {
            let code = exitCode(for: error)
            guard code != .success, code.rawValue != 1, code.rawValue != 2 else { exit(withError: error) }
            let message = fullMessage(for: error)
            if !message.isEmpty { FileHandle.standardError.write(Data((message + "\n").utf8)) }
            Foundation.exit(2)
        }
    }
}

extension SesameCommand {
    /// Parses a command line (without the program name), the seed's forms included.
    public static func parse(commandLine arguments: [String]) throws -> any ParsableCommand {
        try parseAsRoot(expandingAliases(arguments))
    }

    /// The seed's command names, each as the group and command it now is: `group:command` for every
    /// command of every group, and `upload` for `config upload`.
    static let aliases: [String: [String]] = {
        var aliases = ["upload": [ConfigGroup._commandName, UploadCommand._commandName]]
        for group in configuration.subcommands {
            for command in group.configuration.subcommands {
                aliases["\(group._commandName):\(command._commandName)"] = [group._commandName, command._commandName]
            }
        }
        return aliases
    }()

    /// `arguments` with a leading alias replaced by the group and command it names.
    static func expandingAliases(_ arguments: [String]) -> [String] {
        guard let first = arguments.first, let expansion = aliases[first] else { return arguments }
        return expansion + arguments.dropFirst()
    }
}

import ArgumentParser
import Foundation

/// `sesame`: the command developers and CI run.
public struct SesameCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "sesame",
        abstract: "Sesame: ship an iOS app with no secrets inside.",
        discussion: """
            Commands that talk to Sesame read the server from --url or SESAME_URL and the provisioning \
            key from SESAME_KEY (or --key). Exit status: 0 done, 1 refused (by the server, or a wrong \
            vault password), 2 the command could not be carried out (bad input, file, network).
            """,
        subcommands: [
            UploadCommand.self, EncryptCommand.self, DecryptCommand.self, KeysCreateCommand.self, KeysRevokeCommand.self,
            ConfigViewCommand.self, ConfigDeleteCommand.self, ConfigHistoryCommand.self, ConfigRollbackCommand.self,
            ConfigResolveCommand.self, ConfigBodyCommand.self, ConfigDiffCommand.self, KeysListCommand.self, DevicesListCommand.self,
            DevicesRevokeCommand.self, PinsAddCommand.self, PinsListCommand.self, PinsRemoveCommand.self, PinsSigningKeyCommand.self,
            PinsPrepareSigningKeyCommand.self, PinsRotateSigningKeyCommand.self, KillSwitchCommand.self, RevokeCommand.self, BlobUploadCommand.self, DebugTokensCreateCommand.self,
            DebugTokensListCommand.self, DebugTokensRevokeCommand.self, PolicyViewCommand.self, PolicySetCommand.self, AttestCommand.self,
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
            var command = try parseAsRoot(arguments)
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

import ArgumentParser

// The management commands, grouped by what they act on: `sesame config upload`, `sesame keys
// revoke ID`. Each group answers `--help` with its own commands. The seed's colon forms
// (`config:view`, `keys:create`) and the top-level `upload` are kept as aliases: see
// `SesameCommand.expandingAliases`.

/// `sesame config …`.
struct ConfigGroup: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config", abstract: "Publish, inspect and roll back the app's configs.",
        subcommands: [
            UploadCommand.self, ConfigViewCommand.self, ConfigBodyCommand.self, ConfigDiffCommand.self, ConfigHistoryCommand.self,
            ConfigRollbackCommand.self, ConfigRolloutCommand.self, ConfigRolloutsCommand.self,
            ConfigOverrideCommand.self, ConfigOverridesCommand.self, ConfigResolveCommand.self, ConfigDeleteCommand.self,
            ConfigSchemaCommand.self, ConfigValidateCommand.self,
        ])
}

/// `sesame keys …`.
struct KeysGroup: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys", abstract: "Create, list and revoke provisioning keys.",
        subcommands: [KeysCreateCommand.self, KeysListCommand.self, KeysRevokeCommand.self])
}

/// `sesame devices …`.
struct DevicesGroup: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices", abstract: "List and revoke attested installs; the attestation ramp and its counts.",
        subcommands: [DevicesListCommand.self, DevicesRevokeCommand.self, DevicesUnbanCommand.self, DevicesAttestationCommand.self])
}

/// `sesame pins …`.
struct PinsGroup: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pins", abstract: "The app's TLS pins and the key that signs their registry.",
        subcommands: [
            PinsAddCommand.self, PinsListCommand.self, PinsRemoveCommand.self, PinsSigningKeyCommand.self,
            PinsPrepareSigningKeyCommand.self, PinsRotateSigningKeyCommand.self,
        ])
}

/// `sesame backend-keys …`.
struct BackendKeysGroup: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backend-keys", abstract: "Keys your API's backend uses to consume single-use tokens and check assertions.",
        subcommands: [BackendKeysCreateCommand.self, BackendKeysListCommand.self, BackendKeysRevokeCommand.self])
}

/// `sesame apple …`.
struct AppleGroup: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apple", abstract: "The app's DeviceCheck key, which signs Sesame's calls to Apple for it.",
        subcommands: [AppleSetCommand.self, AppleShowCommand.self, AppleCheckCommand.self, AppleRemoveCommand.self])
}

/// `sesame debug-tokens …`.
struct DebugTokensGroup: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "debug-tokens", abstract: "Tokens that let simulators and CI reach the debug tier.",
        subcommands: [DebugTokensCreateCommand.self, DebugTokensListCommand.self, DebugTokensRevokeCommand.self])
}

/// `sesame policy …`.
struct PolicyGroup: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "policy", abstract: "The app's security policy.", subcommands: [PolicyViewCommand.self, PolicySetCommand.self])
}

/// `sesame blob …`.
struct BlobGroup: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "blob", abstract: "Files attested apps download.", subcommands: [BlobUploadCommand.self])
}

/// `sesame audit …`.
struct AuditGroup: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit", abstract: "The app's audit log and the hash chain that makes it tamper-evident.",
        subcommands: [AuditListCommand.self, AuditVerifyCommand.self])
}

/// `sesame relays …`.
struct RelaysGroup: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relays", abstract: "Attested relays: an upstream the app calls through Sesame, which adds the key.",
        subcommands: [RelaysSetCommand.self, RelaysListCommand.self, RelaysRemoveCommand.self])
}

/// `sesame webhooks …`.
struct WebhooksGroup: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhooks", abstract: "HTTPS endpoints told of the app's changes, signed.",
        subcommands: [WebhooksCreateCommand.self, WebhooksListCommand.self, WebhooksRemoveCommand.self])
}

/// `sesame changes …`.
struct ChangesGroup: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "changes", abstract: "Changes waiting for a second person (the two-person rule of the app's policy).",
        subcommands: [ChangesListCommand.self, ChangesShowCommand.self, ChangesApproveCommand.self, ChangesRejectCommand.self, ChangesBreakGlassCommand.self])
}

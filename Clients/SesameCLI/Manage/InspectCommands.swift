import ArgumentParser
import Foundation

/// `sesame config body`.
struct ConfigBodyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "body", abstract: "Print a revision's config as stored (the published one by default; a zero-knowledge envelope as is).")

    @OptionGroup var server: ServerOptions
    @Option(help: "The version pattern.") var ver: String
    @Option(help: "A revision number (from config history); the published one when omitted.") var revision: Int64?

    func run() async throws {
        try await reportingFailures {
            let client = try server.client()
            let body = try await client.call { try await $0.getConfigBody(query: .init(version: ver, revision: revision)).ok.body.json }
            if server.printedReply(of: client) { return }
            // The config alone on standard output, so `sesame config body --ver '*' > config.json` round-trips.
            Console.current.out(JSONDisplay.describe(body.config, pretty: true))
            Console.current.error("Pattern '\(ver)', revision \(body.revision).")
        }
    }
}

/// `sesame config diff`.
struct ConfigDiffCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff", abstract: "Show what changed between two revisions of a pattern (to the published one by default).")

    @OptionGroup var server: ServerOptions
    @Option(help: "The version pattern.") var ver: String
    @Option(help: "The revision to compare from.") var from: Int64
    @Option(help: "The revision to compare to; the published one when omitted.") var to: Int64?

    func run() async throws {
        try await reportingFailures {
            let client = try server.client()
            let diff = try await client.call { try await $0.diffConfig(query: .init(version: ver, from: from, to: to)).ok.body.json }
            if server.printedReply(of: client) { return }
            var lines = diff.changes.map { change -> String in
                let path = change.path.joined(separator: ".")
                switch JSONDisplay.describe(change.kind) {
                case "added": return "+ \(path): \(JSONDisplay.describe(change.to))"
                case "removed": return "- \(path): \(JSONDisplay.describe(change.from))"
                default: return "~ \(path): \(JSONDisplay.describe(change.from)) → \(JSONDisplay.describe(change.to))"
                }
            }
            if diff.changes.isEmpty { lines.append("No change in the config.") }
            if diff.tiersChanged { lines.append("The per-key tiers changed too.") }
            Console.current.out("Revision \(diff.from) → \(diff.to) of '\(ver)':\n" + lines.joined(separator: "\n"))
        }
    }
}

/// `sesame keys list`.
struct KeysListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List the app's provisioning keys: name, hint, created, by whom, last used, revoked (never the keys).")

    @OptionGroup var server: ServerOptions

    func run() async throws {
        try await reportingFailures {
            let client = try server.client()
            let keys = try await client.call { try await $0.listKeys().ok.body.json.keys }
            if server.printedReply(of: client) { return }
            Console.current.out(
                Table.render(
                    ["NAME", "HINT", "ID", "CREATED", "BY", "LAST USED", "REVOKED"],
                    keys.map { [$0.name, $0.hint, $0.keyId, text($0.createdAt), text($0.createdBy), text($0.lastUsedAt), text($0.revokedAt)] }))
        }
    }
}

/// `sesame devices list`.
struct DevicesListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List attested installs, newest first: key id, environment, app version, first and last seen, revoked.")

    @OptionGroup var server: ServerOptions
    @Option(help: "How many (1 to 500).") var limit = 100
    @Option(help: "Continue after this key id (the 'next' of the previous page).") var after: String?

    func run() async throws {
        try await reportingFailures {
            let client = try server.client()
            let page = try await client.call { try await $0.listDevices(query: .init(after: after, limit: limit)).ok.body.json }
            if server.printedReply(of: client) { return }
            guard !page.devices.isEmpty else { return Console.current.out("No attested device yet.") }
            var output = Table.render(
                ["KEY ID", "ENV", "VERSION", "FIRST SEEN", "LAST SEEN", "COUNTER", "REVOKED", "BANNED"],
                page.devices.map {
                    [
                        $0.keyId, $0.environment.rawValue, text($0.appVersion), text($0.firstSeen), text($0.lastSeen), text($0.counter),
                        Self.revocation($0), Self.ban($0),
                    ]
                })
            if let next = page.next { output += "\nMore: sesame devices list --after \(next)" }
            Console.current.out(output)
        }
    }
}

extension DevicesListCommand {
    /// When and why a device was revoked; `-` for a live one.
    static func revocation(_ device: Components.Schemas.Device) -> String {
        guard let at = device.revokedAt else { return "-" }
        return "\(text(at)) (\(text(device.revokedReason)))"
    }

    /// When a device was banned; `-` for one that is not, `no token` for one that cannot be.
    static func ban(_ device: Components.Schemas.Device) -> String {
        if let at = device.bannedAt { return text(at) }
        return device.deviceCheck == true ? "-" : "- (no token)"
    }
}

/// `sesame devices revoke`.
struct DevicesRevokeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revoke",
        abstract: "Revoke an attested install: its tokens are refused at once everywhere and it cannot refresh (it must attest a new key).")

    @OptionGroup var server: ServerOptions
    @Option(name: .customLong("key-id"), help: "The device's key id, as devices list shows it.") var keyID: String
    @Option(help: "Why, for the audit log.") var reason: String
    @Flag(help: "Also ban the device: set the policy's DeviceCheck bit with Apple, so it is refused whatever key it makes, across reinstalls.")
    var ban = false

    func run() async throws {
        try await reportingFailures {
            let client = try server.client()
            _ = try await client.call { try await $0.revokeDevice(body: .json(.init(keyId: keyID, reason: reason, ban: ban ? true : nil))) }
            server.confirm(client, or: ban ? "Revoked and banned." : "Revoked.")
        }
    }
}

/// `sesame devices unban`.
struct DevicesUnbanCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unban", abstract: "Lift a device's ban (clear its DeviceCheck bit with Apple): it may attest a new key again.")

    @OptionGroup var server: ServerOptions
    @Option(name: .customLong("key-id"), help: "The banned device's key id, as devices list shows it.") var keyID: String
    @Option(help: "Why, for the audit log.") var reason: String

    func run() async throws {
        try await reportingFailures {
            let client = try server.client()
            _ = try await client.call { try await $0.unbanDevice(body: .json(.init(keyId: keyID, reason: reason))).ok }
            server.confirm(client, or: "The ban is lifted.")
        }
    }
}

/// `sesame devices attestation`.
struct DevicesAttestationCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attestation",
        abstract: "The attestation ramp (by hand or automatic, and why it holds) and the last day's attestations: success rate, failures, devices' reports.")

    @OptionGroup var server: ServerOptions

    func run() async throws {
        try await reportingFailures {
            let client = try server.client()
            let status = try await client.call { try await $0.getAttestation().ok.body.json }
            if server.printedReply(of: client) { return }
            Console.current.out(Self.render(status))
        }
    }

    static func render(_ status: Components.Schemas.AttestationStatus) -> String {
        let ramp = status.ramp
        var lines: [String] = []
        let share = ramp.percent.map { "\(Self.number($0)) % of new installs attest" } ?? "every install attests"
        lines.append("Ramp: \(share)" + (ramp.automatic ? " (automatic\(ramp.startedFrom.map { ", from \(Self.number($0)) %" } ?? ""))" : ""))
        if let widened = ramp.widenedAt { lines.append("Started or last widened: \(text(widened)); due again a day later") }
        if let reason = ramp.holdReason { lines.append("Held: \(reason)") }
        let day = status.lastDay
        let rate = day.successRate.map { "\(Self.number(($0 * 1000).rounded() / 10)) %" } ?? "-"
        lines.append("")
        lines.append(
            Table.render(
                ["LAST DAY", "ATTESTED", "REFUSED", "DEVICE FAILED", "RATE LIMITED", "SUCCESS", "UNSUPPORTED", "OUTSIDE RAMP"],
                [["", "\(day.attested)", "\(day.refused)", "\(day.deviceFailed)", "\(day.rateLimited)", rate, "\(day.unsupported)", "\(day.outsideRamp)"]]))
        return lines.joined(separator: "\n")
    }

    /// 1 for 1.0, 2.5 for 2.5.
    static func number(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }
}

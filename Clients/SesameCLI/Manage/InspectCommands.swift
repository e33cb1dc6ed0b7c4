import ArgumentParser
import Foundation

/// `sesame config body`.
struct ConfigBodyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "body", abstract: "Print a revision's config as stored (the published one by default; a zero-knowledge envelope as is).")

    @OptionGroup var server: ServerOptions
    @Option(help: "The version pattern.") var ver: String
    @Option(help: "A revision number (from config history); the published one when omitted.") var revision: Int?

    func run() async throws {
        try await reportingFailures {
            var query = ["version": ver]
            query["revision"] = revision.map(String.init)
            let reply = try await server.client().get("config/body", query: query)
            if server.json { return Console.current.out(String(decoding: reply.raw, as: UTF8.self)) }
            // The config alone on standard output, so `sesame config body --ver '*' > config.json` round-trips.
            Console.current.out(JSONDisplay.describe(reply.object["config"], pretty: true))
            Console.current.error("Pattern '\(ver)', revision \(text(reply.object["revision"])).")
        }
    }
}

/// `sesame config diff`.
struct ConfigDiffCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff", abstract: "Show what changed between two revisions of a pattern (to the published one by default).")

    @OptionGroup var server: ServerOptions
    @Option(help: "The version pattern.") var ver: String
    @Option(help: "The revision to compare from.") var from: Int
    @Option(help: "The revision to compare to; the published one when omitted.") var to: Int?

    func run() async throws {
        try await reportingFailures {
            var query = ["version": ver, "from": String(from)]
            query["to"] = to.map(String.init)
            let reply = try await server.client().get("config/diff", query: query)
            if server.json { return Console.current.out(String(decoding: reply.raw, as: UTF8.self)) }
            let changes = reply.object["changes"] as? [[String: Any]] ?? []
            var lines = changes.map { change -> String in
                let path = (change["path"] as? [String] ?? []).joined(separator: ".")
                switch change["kind"] as? String {
                case "added": return "+ \(path): \(JSONDisplay.describe(change["to"]))"
                case "removed": return "- \(path): \(JSONDisplay.describe(change["from"]))"
                default: return "~ \(path): \(JSONDisplay.describe(change["from"])) → \(JSONDisplay.describe(change["to"]))"
                }
            }
            if changes.isEmpty { lines.append("No change in the config.") }
            if reply.object["tiersChanged"] as? Bool == true { lines.append("The per-key tiers changed too.") }
            Console.current.out(
                "Revision \(text(reply.object["from"])) → \(text(reply.object["to"])) of '\(ver)':\n" + lines.joined(separator: "\n"))
        }
    }
}

/// `sesame keys list`.
struct KeysListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List the app's provisioning keys: name, hint, created, last used, revoked (never the keys).")

    @OptionGroup var server: ServerOptions

    func run() async throws {
        try await reportingFailures {
            let reply = try await server.client().get("keys")
            if server.json { return Console.current.out(String(decoding: reply.raw, as: UTF8.self)) }
            let keys = reply.object["keys"] as? [[String: Any]] ?? []
            Console.current.out(
                Table.render(
                    ["NAME", "HINT", "ID", "CREATED", "LAST USED", "REVOKED"],
                    keys.map {
                        [text($0["name"]), text($0["hint"]), text($0["keyId"]), text($0["createdAt"]), text($0["lastUsedAt"]), text($0["revokedAt"])]
                    }))
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
            var query = ["limit": String(limit)]
            query["after"] = after
            let reply = try await server.client().get("devices", query: query)
            if server.json { return Console.current.out(String(decoding: reply.raw, as: UTF8.self)) }
            let devices = reply.object["devices"] as? [[String: Any]] ?? []
            guard !devices.isEmpty else { return Console.current.out("No attested device yet.") }
            var output = Table.render(
                ["KEY ID", "ENV", "VERSION", "FIRST SEEN", "LAST SEEN", "COUNTER", "REVOKED"],
                devices.map {
                    [
                        text($0["keyId"]), text($0["environment"]), text($0["appVersion"]), text($0["firstSeen"]), text($0["lastSeen"]),
                        text($0["counter"]), Self.revocation($0),
                    ]
                })
            if let next = reply.object["next"] as? String { output += "\nMore: sesame devices list --after \(next)" }
            Console.current.out(output)
        }
    }
}

extension DevicesListCommand {
    /// When and why a device was revoked; `-` for a live one.
    static func revocation(_ device: [String: Any]) -> String {
        guard let at = device["revokedAt"] as? String else { return "-" }
        return "\(at) (\(text(device["revokedReason"])))"
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

    func run() async throws {
        try await reportingFailures {
            let reply = try await server.client().post("devices/revoke", ["keyId": keyID, "reason": reason])
            server.show(reply) { $0.message(or: "Revoked.") }
        }
    }
}

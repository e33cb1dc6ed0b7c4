import ArgumentParser
import Foundation

/// `sesame webhooks create`.
struct WebhooksCreateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create", abstract: "Tell an HTTPS endpoint of the app's changes (signed; its secret is printed once).")

    @OptionGroup var server: ServerOptions
    @Option(help: "The endpoint's https URL.") var endpoint: String
    @Option(help: "Comma-separated events (config.published, kill_switch, revocation, …); every event when omitted.") var events: String?
    @Flag(help: "Post Slack's incoming-webhook shape ({\"text\": …}) instead of Sesame's.") var slack = false

    func run() async throws {
        try await reportingFailures {
            var body: [String: Any] = ["url": endpoint, "format": slack ? "slack" : "sesame"]
            if let events { body["events"] = events.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
            let reply = try await server.client().post("webhooks", body)
            if server.json { return Console.current.out(String(decoding: reply.raw, as: UTF8.self)) }
            // The secret alone on standard output, so it can be piped into a secret store.
            Console.current.out(text(reply.object["secret"]))
            Console.current.error("Webhook \(text(reply.object["id"])): \(text(reply.object["message"]))")
        }
    }
}

/// `sesame webhooks list`.
struct WebhooksListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List the app's webhooks with their last delivery (never their secrets).")

    @OptionGroup var server: ServerOptions

    func run() async throws {
        try await reportingFailures {
            let reply = try await server.client().get("webhooks")
            if server.json { return Console.current.out(String(decoding: reply.raw, as: UTF8.self)) }
            let hooks = reply.object["webhooks"] as? [[String: Any]] ?? []
            Console.current.out(
                Table.render(
                    ["ID", "URL", "EVENTS", "DELIVERED", "LAST STATUS", "LAST ERROR", "NEXT TRY"],
                    hooks.map { hook in
                        let events = (hook["events"] as? [String] ?? []).joined(separator: ",")
                        return [
                            text(hook["id"]), text(hook["url"]), events.isEmpty ? "all" : events, text(hook["delivered"]), text(hook["lastStatus"]),
                            text(hook["lastError"]), text(hook["nextAttemptAt"]),
                        ]
                    }))
        }
    }
}

/// `sesame webhooks remove`.
struct WebhooksRemoveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "remove", abstract: "Remove a webhook: it is told of nothing more.")

    @OptionGroup var server: ServerOptions
    @Argument(help: "The webhook's id, from 'sesame webhooks list'.") var id: String

    func run() async throws {
        try await reportingFailures {
            let reply = try await server.client().delete("webhooks/\(id)", query: [:])
            server.show(reply) { text($0.object["message"]) }
        }
    }
}

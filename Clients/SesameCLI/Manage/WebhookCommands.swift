import ArgumentParser
import Foundation
import OpenAPIRuntime

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
            typealias Event = Operations.createWebhook.Input.Body.jsonPayload.eventsPayloadPayload
            let named = try events?.split(separator: ",").map { name throws(CLIFailure) -> Event in
                let trimmed = name.trimmingCharacters(in: .whitespaces)
                guard let event = Event(rawValue: trimmed) else {
                    throw CLIFailure("'\(trimmed)' is not an event; the events are \(Event.allCases.map(\.rawValue).joined(separator: ", "))", exitCode: 2)
                }
                return event
            }
            let client = try server.client()
            let body = Operations.createWebhook.Input.Body.jsonPayload(url: endpoint, events: named, format: .init(stringLiteral: slack ? "slack" : "sesame"))
            let created = try await client.call { try await $0.createWebhook(body: .json(body)).ok.body.json }
            if server.printedReply(of: client) { return }
            // The secret alone on standard output, so it can be piped into a secret store.
            Console.current.out(created.secret)
            Console.current.error("Webhook \(created.id): \(created.message)")
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
            let client = try server.client()
            let hooks = try await client.call { try await $0.listWebhooks().ok.body.json.webhooks }
            if server.printedReply(of: client) { return }
            Console.current.out(
                Table.render(
                    ["ID", "URL", "EVENTS", "DELIVERED", "LAST STATUS", "LAST ERROR", "NEXT TRY"],
                    hooks.map { hook in
                        let events = hook.events.joined(separator: ",")
                        return [
                            hook.id, hook.url, events.isEmpty ? "all" : events, text(hook.delivered), text(hook.lastStatus), text(hook.lastError),
                            text(hook.nextAttemptAt),
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
            let client = try server.client()
            _ = try await client.call { try await $0.removeWebhook(path: .init(id: id)) }
            server.confirm(client, or: "-")
        }
    }
}

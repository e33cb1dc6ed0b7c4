import Foundation
import Hummingbird
import SesameConfiguration
import SesameDomain
import SesameHTTP
import SesameOutbound

/// `webhooks`: register an HTTPS endpoint for the app's events, list them with their last
/// delivery, remove one.
struct WebhookRoutes {
    let authenticator: AdminAuthenticator
    let webhooks: WebhookStore
    let outbound: OutboundAddressPolicy

    func addRoutes(to group: RouterGroup<SesameRequestContext>) {
        group.post("webhooks") { request, context -> WebhookCreatedResponse in
            let (appID, caller) = try await authenticator.app(of: request)
            let body = try await request.decode(as: WebhookRequest.self, context: context)
            guard body.url.utf8.count <= 2048 else { throw APIError.invalidField("url", "must be at most 2048 bytes") }
            if let refusal = outbound.refusal(of: body.url, for: OutboundUse(.webhook, appID: appID)) { throw APIError.invalidField("url", refusal) }
            let events = body.events ?? []
            if let unknown = events.first(where: { WebhookTopic(rawValue: $0) == nil }) {
                throw APIError.invalidField("events", "has '\(unknown)', which is not an event; events are \(WebhookTopic.allCases.map(\.rawValue).sorted().joined(separator: ", "))")
            }
            let format = body.format ?? "sesame"
            guard ["sesame", "slack"].contains(format) else { throw APIError.invalidField("format", "must be sesame or slack") }
            let (id, secret) = try await webhooks.create(appID: appID, url: body.url, events: Array(Set(events)).sorted(), format: format, caller: caller)
            return WebhookCreatedResponse(
                message: "Registered; copy the secret now, Sesame shows it only once. Deliveries are signed with it (Sesame-Signature).",
                id: id.uuidString.lowercased(), secret: secret)
        }

        group.get("webhooks") { request, _ -> WebhooksResponse in
            let (appID, _) = try await authenticator.app(of: request)
            return WebhooksResponse(webhooks: try await webhooks.list(appID: appID), events: WebhookTopic.allCases.map(\.rawValue).sorted())
        }

        group.delete("webhooks/:id") { request, context -> WebhookRemovedResponse in
            let (appID, caller) = try await authenticator.app(of: request)
            guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)) else { throw WebhookErrors.notFound }
            guard try await webhooks.remove(appID: appID, id: id, caller: caller) else { throw WebhookErrors.notFound }
            return WebhookRemovedResponse(message: "Removed; it is told of nothing more.")
        }
    }
}

/// `POST /v1/admin/webhooks`.
struct WebhookRequest: Decodable {
    let url: String
    /// The events to send; every event when absent or empty.
    let events: [String]?
    /// `sesame` (default) or `slack` (a Slack incoming webhook's `{"text": …}`).
    let format: String?
}

/// `POST /v1/admin/webhooks`'s answer (the secret, `whsec_…`, shown once), `GET`'s list and `DELETE`'s answer.
typealias WebhookCreatedResponse = Operations.createWebhook.Output.Ok.Body.jsonPayload
typealias WebhooksResponse = Operations.listWebhooks.Output.Ok.Body.jsonPayload
typealias WebhookRemovedResponse = Operations.removeWebhook.Output.Ok.Body.jsonPayload

extension WebhookCreatedResponse: ResponseEncodable {}
extension WebhooksResponse: ResponseEncodable {}
extension WebhookRemovedResponse: ResponseEncodable {}

import Foundation
import Logging
import NIOCore
import ServiceLifecycle
import SesameConfiguration
import SesameOutbound
import SesameServer
import SesameStorage

/// Delivers each app's changes to its webhooks: claims a webhook whose turn has come, posts it
/// the events after its cursor in order (signed), and moves the cursor past each one delivered or
/// not subscribed to. A failed delivery is tried again with exponential backoff (capped at an
/// hour) and blocks the ones after it, so a receiver sees every event once it is back, in order.
/// Every call goes through the guarded outbound client: no internal addresses, 5 s at most.
///
/// Fair to every app: `workers` turns run at once, one app holds at most one of them (`claim`
/// skips apps with a turn under way), a turn ends at `turnDeadline` (checked between posts), the
/// cursor moves after each post, and a webhook whose turn ended goes to the back of the queue. So
/// an endpoint that answers slowly, or not at all, delays other apps' webhooks by seconds.
struct WebhookDispatcher: Service {
    let webhooks: WebhookStore
    let outbound: OutboundHTTPClient
    let migrations: MigrationService
    /// How often to look for due webhooks when none was.
    let interval: Duration
    let logger: Logger

    /// Turns that run at once.
    static let workers = 4
    /// The longest one webhook's turn goes on posting: past it the turn ends after the post under way.
    static let turnDeadline: Duration = .seconds(10)

    func run() async throws {
        // The webhooks table is the schema's; on a first start it does not exist yet.
        try? await cancelWhenGracefulShutdown { try await migrations.waitUntilComplete() }
        await withDiscardingTaskGroup { group in
            for _ in 0..<Self.workers { group.addTask { await work() } }
        }
    }

    /// One worker: turns while there are webhooks due, a rest when none was.
    private func work() async {
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            do {
                // Work while there is work; rest only when nothing was due.
                // Bounded by the claim's lease: a turn stuck on a connection PostgreSQL closed
                // would otherwise stop every webhook.
                if try await withTimeout(Self.claimLease, { try await turn() }) { continue }
            } catch {
                logger.warning("webhook dispatch failed; will retry", metadata: ["error": "\(String(reflecting: error))"])
            }
            try? await cancelWhenGracefulShutdown { [interval] in try await Task.sleep(for: interval) }
        }
    }

    /// How long a claimed webhook is this dispatcher's, and the longest its turn may take.
    static let claimLease: Duration = .seconds(60)

    /// One webhook's turn; false when none was due.
    func turn() async throws -> Bool {
        guard let hook = try await webhooks.claim(lease: Self.claimLease, batch: 20) else { return false }
        let deadline = ContinuousClock.now + Self.turnDeadline
        // Each delivery is recorded as it is made; what is left to record is the cursor past
        // entries the webhook does not subscribe to.
        var (cursor, lastStatus): (Int64?, Int?) = (nil, nil)
        for (entry, hash) in hook.entries {
            // The rest waits for the webhook's next turn, behind the other webhooks due.
            if ContinuousClock.now >= deadline { break }
            guard let event = WebhookEvent.named(forAction: entry.action), hook.events.isEmpty || hook.events.contains(event) else {
                cursor = entry.id
                continue
            }
            let delivery = "\(hook.id.uuidString.lowercased()):\(entry.id)"
            do {
                let body = try WebhookEvent.payload(event: event, entry: entry, entryHash: hash, appID: hook.appID, delivery: delivery, slack: hook.slack)
                lastStatus = try await outbound.post(
                    hook.url, for: OutboundUse(.webhook, appID: hook.appID),
                    headers: [
                        ("Content-Type", "application/json"), ("User-Agent", "Sesame-Webhooks/1"), ("Sesame-Event", event),
                        ("Sesame-Delivery", delivery), ("Sesame-Signature", WebhookEvent.signature(body: body, secret: hook.secret, at: Date())),
                    ],
                    body: ByteBuffer(bytes: body))
                cursor = entry.id
                // Recorded at once: a turn cut short never posts an event twice.
                try await webhooks.advance(hook.id, to: entry.id, delivered: 1, status: lastStatus, release: false)
            } catch {
                if let cursor { try await webhooks.advance(hook.id, to: cursor, delivered: 0, status: lastStatus) }
                let status: Int? = if case OutboundHTTPClient.Refusal.status(let code) = error { code } else { nil }
                let reason = Self.reason(error)
                try await webhooks.failed(hook.id, status: status, error: reason, retryAfter: Self.backoff(attempt: cursor == nil ? hook.attempts + 1 : 1))
                logger.notice("webhook delivery failed", metadata: ["webhook": "\(hook.id)", "delivery": "\(delivery)", "reason": "\(reason)"])
                return true
            }
        }
        try await webhooks.advance(hook.id, to: cursor ?? 0, delivered: 0, status: lastStatus)
        return true
    }

    /// Why a delivery failed, as the webhook's owner may read it: never an address the name
    /// resolved to (a viewer would learn the deployment's internal DNS answers).
    static func reason(_ error: any Error) -> String {
        switch error as? OutboundHTTPClient.Refusal {
        case .internalAddress(let host, _, _)?: "\(host) resolves to an internal address"
        case let refusal?: refusal.description
        case nil: "the endpoint could not be reached"
        }
    }

    /// 2, 4, 8 … seconds, at most an hour.
    static func backoff(attempt: Int) -> Duration {
        .seconds(min(3600, 1 << min(max(attempt, 1), 12)))
    }
}

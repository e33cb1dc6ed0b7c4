import Foundation
import HTTPTypes
import PostgresNIO
import SesameDomain
import SesameEncryption
import SesameHTTP
import SesameJSON
import SesameStorage

/// A webhook as listed: never its secret (the document's `Webhook`).
typealias WebhookInfo = Components.Schemas.Webhook

/// The webhooks of an app: made (their secret shown once), listed with their last status,
/// removed; and, for the dispatcher, claimed one at a time and moved along the audit log.
struct WebhookStore: Sendable {
    /// At most this many webhooks per app.
    static let limit = 10

    let database: Database
    let encryption: EnvelopeEncryption
    let logger: Logger

    /// Registers `url` for `events` (every event when empty); returns its id and the signing
    /// secret, which is not shown again. It starts after the newest audit entry: it is told of
    /// what happens from now on.
    func create(appID: String, url: String, events: [String], format: String, caller: Caller) async throws -> (UUID, String) {
        let id = UUID()
        let secret = "whsec_" + Base64.urlEncode((0..<32).map { _ in UInt8.random(in: 0...255) })
        let sealed = Data(try encryption.seal(Array(secret.utf8), context: SealingContext.webhookSecret(appID: appID, webhookID: id)))
        try await database.client.withRefusingTransaction(logger: logger) { connection in
            // The audit chain's lock: no entry of the app commits between reading the cursor and using it.
            try await AuditLog.append(
                AuditEntry(actor: caller.auditName, action: .webhookCreate, details: ["webhookId": .string(id.uuidString.lowercased()), "url": .string(Self.redacted(url))]),
                appID: appID, on: connection, logger: logger)
            let counted = try await connection.query("SELECT count(*) FROM webhooks WHERE app_id = \(appID)", logger: logger)
            for try await count in counted.decode(Int.self) where count >= Self.limit { throw WebhookErrors.tooMany(limit: Self.limit) }
            try await connection.query(
                """
                INSERT INTO webhooks (webhook_id, app_id, url, secret_ciphertext, events, format, created_by, cursor)
                SELECT \(id), \(appID), \(url), \(sealed), \(events)::text[], \(format), \(caller.auditName), max(id)
                FROM audit_log WHERE app_id = \(appID)
                """, logger: logger)
        }
        return (id, secret)
    }

    func list(appID: String) async throws -> [WebhookInfo] {
        let rows = try await database.client.query(
            """
            SELECT webhook_id, url, events, format, created_by, created_at, delivered, attempts,
                   CASE WHEN attempts > 0 THEN next_attempt_at END, last_status, last_error, last_attempt_at, last_delivered_at
            FROM webhooks WHERE app_id = \(appID) ORDER BY created_at
            """, logger: logger)
        var hooks: [WebhookInfo] = []
        for try await (id, url, events, format, createdBy, createdAt, delivered, attempts, next, status, error, attempted, deliveredAt) in rows.decode(
            (UUID, String, [String], String, String, Date, Int64, Int, Date?, Int?, String?, Date?, Date?).self)
        {
            hooks.append(
                WebhookInfo(
                    id: id.uuidString.lowercased(), url: url, events: events, format: format, delivered: delivered, attempts: attempts,
                    createdBy: createdBy, createdAt: createdAt, nextAttemptAt: next, lastStatus: status, lastError: error, lastAttemptAt: attempted,
                    lastDeliveredAt: deliveredAt))
        }
        return hooks
    }

    /// Removes webhook `id` of `appID`; false when there is none.
    func remove(appID: String, id: UUID, caller: Caller) async throws -> Bool {
        try await database.client.withRefusingTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                "DELETE FROM webhooks WHERE app_id = \(appID) AND webhook_id = \(id) RETURNING url", logger: logger)
            var url: String?
            for try await removed in rows.decode(String.self) { url = removed }
            guard let url else { return false }
            try await AuditLog.append(
                AuditEntry(actor: caller.auditName, action: .webhookRemove, details: ["webhookId": .string(id.uuidString.lowercased()), "url": .string(Self.redacted(url))]),
                appID: appID, on: connection, logger: logger)
            return true
        }
    }

    /// `url` as the audit log (and so every webhook's payload) names it: its origin, with its path
    /// and query cut, since a webhook URL is often itself the secret (Slack's, for one).
    static func redacted(_ url: String) -> String {
        guard let components = URLComponents(string: url), let scheme = components.scheme, let host = components.host else { return "…" }
        let port = components.port.map { ":\($0)" } ?? ""
        let rest = components.path.isEmpty || components.path == "/" ? (components.query == nil ? "" : "/…") : "/…"
        return "\(scheme)://\(host)\(port)\(rest)"
    }

    // MARK: The dispatcher's side

    /// A webhook claimed for one turn, with the audit entries after its cursor.
    struct Claimed: Sendable {
        let id: UUID
        let appID: String
        let url: String
        let secret: [UInt8]
        let events: Set<String>
        let slack: Bool
        let attempts: Int
        let entries: [(entry: AuditEntry, hash: [UInt8]?)]
    }

    /// Claims a webhook whose turn has come (none another replica holds) for `lease`, with up to
    /// `batch` entries after its cursor; nil when none is due.
    func claim(lease: Duration, batch: Int) async throws -> Claimed? {
        let seconds = Double(lease.components.seconds)
        let claimed = try await database.client.query(
            """
            UPDATE webhooks SET lease_until = now() + \(seconds) * INTERVAL '1 second'
            WHERE webhook_id = (
                SELECT w.webhook_id FROM webhooks w
                WHERE w.next_attempt_at <= now() AND (w.lease_until IS NULL OR w.lease_until < now())
                  AND EXISTS (SELECT 1 FROM audit_log a WHERE a.app_id = w.app_id AND a.id > w.cursor)
                  -- One turn per app at a time: an app's slow endpoints hold one worker, not all.
                  AND NOT EXISTS (SELECT 1 FROM webhooks o WHERE o.app_id = w.app_id AND o.lease_until >= now())
                ORDER BY w.next_attempt_at LIMIT 1 FOR UPDATE SKIP LOCKED)
            RETURNING webhook_id, app_id, url, secret_ciphertext, events, format, attempts, cursor
            """, logger: logger)
        var found: (UUID, String, String, Data, [String], String, Int, Int64)?
        for try await row in claimed.decode((UUID, String, String, Data, [String], String, Int, Int64).self) { found = row }
        guard let (id, appID, url, sealed, events, format, attempts, cursor) = found else { return nil }
        let secret = try encryption.open(sealed, context: SealingContext.webhookSecret(appID: appID, webhookID: id))
        let entries = try await AuditLog(database: database, logger: logger).chainedEntries(appID: appID, after: cursor, limit: batch)
        return Claimed(
            id: id, appID: appID, url: url, secret: secret, events: Set(events), slack: format == "slack", attempts: attempts, entries: entries)
    }

    /// Entries up to `cursor` are handled (delivered, or not subscribed to): moves past them, and
    /// (unless `release` is false, mid-turn) ends the turn, the webhook at the back of the queue.
    func advance(_ id: UUID, to cursor: Int64, delivered: Int, status: Int?, release: Bool = true) async throws {
        try await database.client.query(
            """
            UPDATE webhooks SET cursor = GREATEST(cursor, \(cursor)), attempts = 0,
                next_attempt_at = CASE WHEN \(release) THEN now() ELSE next_attempt_at END,
                lease_until = CASE WHEN \(release) THEN NULL ELSE lease_until END,
                delivered = delivered + \(delivered),
                last_status = COALESCE(\(status), last_status), last_error = CASE WHEN \(delivered) > 0 THEN NULL ELSE last_error END,
                last_attempt_at = CASE WHEN \(delivered) > 0 THEN now() ELSE last_attempt_at END,
                last_delivered_at = CASE WHEN \(delivered) > 0 THEN now() ELSE last_delivered_at END
            WHERE webhook_id = \(id)
            """, logger: logger)
    }

    /// The entry after the cursor could not be delivered: tries it again after `retryAfter`.
    func failed(_ id: UUID, status: Int?, error: String, retryAfter: Duration) async throws {
        let seconds = Double(retryAfter.components.seconds)
        try await database.client.query(
            """
            UPDATE webhooks SET attempts = attempts + 1, next_attempt_at = now() + \(seconds) * INTERVAL '1 second', lease_until = NULL,
                last_status = \(status), last_error = \(error), last_attempt_at = now()
            WHERE webhook_id = \(id)
            """, logger: logger)
    }
}

enum WebhookErrors {
    static func tooMany(limit: Int) -> APIError {
        APIError(.conflict, code: AdminErrorCode.tooManyWebhooks, message: "The app already has \(limit) webhooks, the most it may: remove one first.")
    }
    static let notFound = APIError(.notFound, code: AdminErrorCode.webhookNotFound, message: "The app has no such webhook; see 'sesame webhooks list'.")
}

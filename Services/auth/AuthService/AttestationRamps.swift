import Foundation
import Logging
import PostgresNIO
import SesameDomain
import SesameJSON
import SesameStorage
import Synchronization

/// Where each app's automatic attestation ramp stands (`attestation_ramps`), widened by
/// `AttestationRampRule`, and the percentages a challenge hands out, kept in memory between rounds.
final class AttestationRamps: Sendable {
    let database: Database
    let policies: StoredPolicies
    let logger: Logger

    /// An app's automatic ramp as last read: its percentage, and the policy's start it was counted from.
    private struct Current: Sendable {
        let percent: Double
        let startedFrom: Double
    }

    private let current = Mutex<[String: Current]>([:])

    init(database: Database, policies: StoredPolicies, logger: Logger) {
        self.database = database
        self.policies = policies
        self.logger = logger
    }

    /// The share of new installs that attest, as a challenge tells it: the policy's, or where its
    /// automatic ramp stands (until the keeper has started it, or after the policy moved its start,
    /// the policy's start).
    func percent(for app: RegisteredApp) -> Double? {
        guard let ramp = current.withLock({ $0[app.appID] }), app.policy.countsAutomaticRamp(from: ramp.startedFrom) else {
            return app.policy.attestationRamp
        }
        return ramp.percent
    }

    /// Reads every automatic ramp's percentage (a round's last step, on every replica).
    func reload() async throws {
        var read: [String: Current] = [:]
        let rows = try await database.client.query("SELECT app_id, percent, started_from FROM attestation_ramps", logger: logger)
        for try await (appID, percent, startedFrom) in rows.decode((String, Double, Double).self) {
            read[appID] = Current(percent: percent, startedFrom: startedFrom)
        }
        current.withLock { $0 = read }
    }

    /// Starts, widens or holds each app's automatic ramp; forgets the ramps of apps that no longer ask
    /// for one, and the hourly counts older than `retention`. Replicas may run it at once: each app's
    /// row is read and changed under its lock.
    func advance() async throws {
        var automatic: [(appID: String, start: Double)] = []
        let apps = try await database.client.query(
            "SELECT app_id, policy::text FROM apps WHERE policy @> '{\"attestationRampAutomatic\": true}'::jsonb", logger: logger)
        for try await (appID, policy) in apps.decode((String, String).self) {
            if let start = try policies.policy(policy).attestationRamp { automatic.append((appID, start)) }
        }
        for app in automatic { try await advance(appID: app.appID, start: app.start) }
        try await database.client.query(
            "DELETE FROM attestation_ramps WHERE NOT (app_id = ANY(\(automatic.map(\.appID))))", logger: logger)
        try await database.client.query(
            "DELETE FROM attestation_outcomes WHERE hour < now() - \(Self.retentionDays) * interval '1 day'", logger: logger)
    }

    /// How many days hourly counts are kept: the dashboard shows the last day, the ramp reads it.
    static let retentionDays = 30

    private func advance(appID: String, start: Double) async throws {
        try await database.client.withTransaction(logger: logger) { connection in
            try await connection.query(
                """
                INSERT INTO attestation_ramps (app_id, percent, started_from, widened_at, checked_at)
                VALUES (\(appID), \(start), \(start), now(), now())
                ON CONFLICT (app_id) DO UPDATE SET percent = EXCLUDED.percent, started_from = EXCLUDED.started_from,
                    widened_at = now(), checked_at = now(), hold_reason = NULL
                WHERE attestation_ramps.started_from <> EXCLUDED.started_from
                """, logger: logger)
            // Locked to the end: another replica's round waits here, then finds it not due.
            try await connection.query("SELECT 1 FROM attestation_ramps WHERE app_id = \(appID) FOR UPDATE", logger: logger)
            let rows = try await connection.query(
                """
                SELECT r.percent, r.widened_at, now(),
                       coalesce(sum(o.attested), 0)::bigint, coalesce(sum(o.refused), 0)::bigint,
                       coalesce(sum(o.device_failed), 0)::bigint, coalesce(sum(o.rate_limited), 0)::bigint
                FROM attestation_ramps r
                LEFT JOIN attestation_outcomes o ON o.app_id = r.app_id AND o.hour > now() - interval '1 day'
                WHERE r.app_id = \(appID) AND r.percent < 100 AND r.widened_at <= now() - interval '1 day'
                GROUP BY r.app_id, r.percent, r.widened_at
                """, logger: logger)
            var due: (percent: Double, widenedAt: Date, now: Date, day: AttestationAttempts)?
            for try await (percent, widenedAt, now, attested, refused, deviceFailed, rateLimited) in rows.decode(
                (Double, Date, Date, Int64, Int64, Int64, Int64).self)
            {
                due = (percent, widenedAt, now, .init(attested: attested, refused: refused, deviceFailed: deviceFailed, rateLimited: rateLimited))
            }
            guard let due else { return }
            switch AttestationRampRule.decide(percent: due.percent, widenedAt: due.widenedAt, now: due.now, day: due.day) {
            case .wait:
                return
            case .hold(let reason):
                try await connection.query(
                    "UPDATE attestation_ramps SET checked_at = now(), hold_reason = \(reason) WHERE app_id = \(appID)", logger: logger)
            case .widen(let percent):
                try await connection.query(
                    """
                    UPDATE attestation_ramps SET percent = \(percent), widened_at = now(), checked_at = now(), hold_reason = NULL
                    WHERE app_id = \(appID)
                    """, logger: logger)
                logger.info("attestation ramp widened", metadata: ["app": "\(appID)", "from": "\(due.percent)", "to": "\(percent)"])
                try await AuditLog.append(
                    AuditEntry(
                        actor: "sesame", action: .attestationRampWiden,
                        details: [
                            "from": .number(due.percent), "to": .number(percent), "attempts": .integer(due.day.attempts),
                            "successRate": .number(due.day.successRate ?? 0),
                        ]),
                    appID: appID, on: connection, logger: logger)
            }
        }
    }
}

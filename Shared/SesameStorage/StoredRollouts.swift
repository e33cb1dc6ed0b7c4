import Foundation
import Logging
import PostgresNIO
import SesameDomain

/// A staged rollout as stored (`config_rollouts`, migration 15).
public struct StoredRollout: Sendable, Equatable {
    public let id: UUID
    public let appID: String
    public let pattern: String
    /// The revision rolled out: the pattern's newest when the rollout began.
    public let revision: Int64
    /// What the other installs get; nil when the pattern served nothing before.
    public let previousRevision: Int64?
    /// Whether `previousRevision` is a zero-knowledge config; nil without one.
    public let previousZeroKnowledge: Bool?
    public let basisPoints: Int
    public let salt: String
    /// `active`, `paused`, `completed` or `rolled_back`.
    public let state: String
    public let createdAt: Date
    public let updatedAt: Date

    /// Whether the rollout still decides what installs get.
    public var inFlight: Bool { state == "active" || state == "paused" }
    public var paused: Bool { state == "paused" }
}

/// Reads staged rollouts: delivery every app's in flight, admin one app's.
public enum StoredRollouts {
    /// The rollouts in flight for every app (`appIDs` nil) or for the apps in `appIDs`.
    public static func inFlight(appIDs: [String]?, from client: some PostgresConnectionSource, logger: Logger) async throws -> [StoredRollout] {
        try await client.withConnection(isolation: #isolation) { connection in
            try await read(appIDs: appIDs, pattern: nil, inFlightOnly: true, on: connection, logger: logger)
        }
    }

    /// The rollouts of `appIDs` (every app when nil), of `pattern` only when given, newest first;
    /// with `inFlightOnly`, only the active and paused ones.
    public static func read(
        appIDs: [String]?, pattern: String?, inFlightOnly: Bool, on connection: PostgresConnection, logger: Logger
    ) async throws -> [StoredRollout] {
        let rows = try await connection.query(
            """
            SELECT r.rollout_id, r.app_id, r.pattern, r.revision, r.previous_revision, p.zero_knowledge, r.basis_points, r.salt, r.state,
                   r.created_at, r.updated_at
            FROM config_rollouts r
            LEFT JOIN config_revisions p ON p.app_id = r.app_id AND p.pattern = r.pattern AND p.revision = r.previous_revision
            WHERE (\(appIDs)::text[] IS NULL OR r.app_id = ANY(\(appIDs)::text[]))
              AND (\(pattern)::text IS NULL OR r.pattern = \(pattern))
              AND (NOT \(inFlightOnly) OR r.state IN ('active', 'paused'))
            ORDER BY r.created_at DESC
            """, logger: logger)
        var rollouts: [StoredRollout] = []
        for try await (id, appID, pattern, revision, previous, previousZeroKnowledge, basisPoints, salt, state, createdAt, updatedAt) in rows.decode(
            (UUID, String, String, Int64, Int64?, Bool?, Int, String, String, Date, Date).self)
        {
            rollouts.append(
                StoredRollout(
                    id: id, appID: appID, pattern: pattern, revision: revision, previousRevision: previous,
                    previousZeroKnowledge: previousZeroKnowledge, basisPoints: basisPoints, salt: salt, state: state,
                    createdAt: createdAt, updatedAt: updatedAt))
        }
        return rollouts
    }
}

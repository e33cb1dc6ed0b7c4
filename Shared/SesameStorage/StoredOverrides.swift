import Foundation
import Logging
import PostgresNIO

/// A device override as stored (`config_overrides`, migration 16).
public struct StoredOverride: Sendable, Equatable {
    public let appID: String
    public let pattern: String
    /// The install's token subject: its attested key id, base64url.
    public let install: String
    public let revision: Int64
    /// Whose device it is, for people ("Ana's iPhone").
    public let label: String
    /// Whether `revision` is a zero-knowledge config.
    public let zeroKnowledge: Bool
    public let createdAt: Date
}

/// Reads device overrides: delivery every app's, admin one app's.
public enum StoredOverrides {
    /// The overrides of every app (`appIDs` nil) or of the apps in `appIDs`, by app, pattern and install.
    public static func read(appIDs: [String]?, from client: some PostgresConnectionSource, logger: Logger) async throws -> [StoredOverride] {
        let rows = try await client.query(
            """
            SELECT o.app_id, o.pattern, o.install, o.revision, o.label, r.zero_knowledge, o.created_at
            FROM config_overrides o
            JOIN config_revisions r ON r.app_id = o.app_id AND r.pattern = o.pattern AND r.revision = o.revision
            WHERE (\(appIDs)::text[] IS NULL OR o.app_id = ANY(\(appIDs)::text[])) AND r.body IS NOT NULL
            ORDER BY o.app_id, o.pattern, o.install
            """, logger: logger, file: #fileID, line: #line)
        var overrides: [StoredOverride] = []
        for try await (appID, pattern, install, revision, label, zeroKnowledge, createdAt) in rows.decode(
            (String, String, String, Int64, String, Bool, Date).self)
        {
            overrides.append(
                StoredOverride(
                    appID: appID, pattern: pattern, install: install, revision: revision, label: label, zeroKnowledge: zeroKnowledge,
                    createdAt: createdAt))
        }
        return overrides
    }
}

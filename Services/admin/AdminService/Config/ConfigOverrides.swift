import Foundation
import PostgresNIO
import SesameDomain
import SesameHTTP
import SesameJSON
import SesameStorage

/// Device overrides: a named install gets a chosen revision of a pattern ("show me the new config
/// on my phone"), under the pattern's lock, audited, in one transaction.
extension ConfigStore {
    /// At most this many overrides per app: they are for testers' devices, not for targeting.
    static let overridesPerApp = 100

    /// Gives `install` revision `revision` of `pattern` (replacing its override there, if any).
    func setOverride(appID: String, pattern: String, install: String, revision: Int64, label: String, caller: Caller) async throws {
        try await database.client.withRefusingTransaction(logger: logger) { connection in
            try await lock(appID: appID, pattern: pattern, on: connection)
            // The revision must have a body, and the pattern must be live: a deleted pattern serves no one.
            let found = try await connection.query(
                """
                SELECT body IS NOT NULL,
                    (SELECT action <> 'delete' FROM config_revisions WHERE app_id = \(appID) AND pattern = \(pattern) ORDER BY revision DESC LIMIT 1)
                FROM config_revisions WHERE app_id = \(appID) AND pattern = \(pattern) AND revision = \(revision)
                """, logger: logger)
            var hasBody: Bool?
            var live: Bool?
            for try await (body, isLive) in found.decode((Bool, Bool?).self) { (hasBody, live) = (body, isLive) }
            guard hasBody == true else { throw AdminErrors.revisionNotFound(pattern, revision) }
            guard live == true else { throw AdminErrors.patternNotFound(pattern) }
            let counted = try await connection.query(
                "SELECT count(*) FROM config_overrides WHERE app_id = \(appID) AND NOT (pattern = \(pattern) AND install = \(install))",
                logger: logger)
            for try await others in counted.decode(Int.self) where others >= Self.overridesPerApp {
                throw AdminErrors.tooManyOverrides(limit: Self.overridesPerApp)
            }
            try await connection.query(
                """
                INSERT INTO config_overrides (app_id, pattern, install, revision, label) VALUES (\(appID), \(pattern), \(install), \(revision), \(label))
                ON CONFLICT (app_id, pattern, install) DO UPDATE SET revision = EXCLUDED.revision, label = EXCLUDED.label, created_at = now()
                """, logger: logger)
            try await AuditLog.append(
                AuditEntry(
                    actor: caller.auditName, action: .configOverrideSet, pattern: pattern, revision: revision,
                    details: ["install": .string(install), "label": .string(label)]),
                appID: appID, on: connection, logger: logger)
        }
    }

    /// Removes `install`'s override of `pattern`; whether there was one.
    func removeOverride(appID: String, pattern: String, install: String, caller: Caller) async throws -> Bool {
        try await database.client.withRefusingTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                "DELETE FROM config_overrides WHERE app_id = \(appID) AND pattern = \(pattern) AND install = \(install) RETURNING revision",
                logger: logger)
            var removed: Int64?
            for try await revision in rows.decode(Int64.self) { removed = revision }
            guard let removed else { return false }
            try await AuditLog.append(
                AuditEntry(actor: caller.auditName, action: .configOverrideRemove, pattern: pattern, revision: removed, details: ["install": .string(install)]),
                appID: appID, on: connection, logger: logger)
            return true
        }
    }

    /// The app's device overrides.
    func overrides(appID: String) async throws -> [StoredOverride] {
        try await StoredOverrides.read(appIDs: [appID], from: database.client, logger: logger)
    }
}

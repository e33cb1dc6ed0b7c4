import Foundation
import Logging
import PostgresNIO
import SesameDomain
import SesameStorage

/// One line of the append-only audit log (the database refuses updates and deletes).
struct AuditEntry: Codable, Sendable {
    var id: Int64 = 0
    var at: Date = Date()
    var actor: String
    var action: String
    var pattern: String?
    var revision: Int64?
    var details: [String: JSONValue] = [:]
}

/// Writes and reads the audit log; writes happen in the mutation's own transaction.
struct AuditLog: Sendable {
    let database: Database
    let logger: Logger

    static func append(_ entry: AuditEntry, appID: String, on connection: PostgresConnection, logger: Logger) async throws {
        let details = String(decoding: try JSONEncoder().encode(entry.details), as: UTF8.self)
        try await connection.query(
            """
            INSERT INTO audit_log (app_id, actor, action, pattern, revision, details)
            VALUES (\(appID), \(entry.actor), \(entry.action), \(entry.pattern), \(entry.revision), \(details)::jsonb)
            """, logger: logger)
    }

    /// Entries of `appID` after `afterID`, oldest first, at most `limit`.
    func entries(appID: String, after afterID: Int64, limit: Int) async throws -> [AuditEntry] {
        let rows = try await database.client.query(
            """
            SELECT id, at, actor, action, pattern, revision, details::text FROM audit_log
            WHERE app_id = \(appID) AND id > \(afterID) ORDER BY id LIMIT \(limit)
            """, logger: logger)
        var entries: [AuditEntry] = []
        for try await (id, at, actor, action, pattern, revision, details) in rows.decode(
            (Int64, Date, String, String, String?, Int64?, String).self)
        {
            entries.append(
                AuditEntry(
                    id: id, at: at, actor: actor, action: action, pattern: pattern, revision: revision,
                    details: (try? JSONDecoder().decode([String: JSONValue].self, from: Data(details.utf8))) ?? [:]))
        }
        return entries
    }
}

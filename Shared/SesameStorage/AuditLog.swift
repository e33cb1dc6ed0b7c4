import Foundation
import Logging
import PostgresNIO
import SesameDomain

/// One line of the append-only audit log (the database refuses updates and deletes).
public struct AuditEntry: Codable, Sendable {
    public var id: Int64 = 0
    public var at: Date = Date()
    /// Who: a provisioning key's audit name, the operator, or a debug token's name.
    public var actor: String
    /// What, as `noun.verb`: `config.upload`, `debug_token.use`, …
    public var action: String
    public var pattern: String?
    public var revision: Int64?
    public var details: [String: JSONValue] = [:]

    public init(
        id: Int64 = 0, at: Date = Date(), actor: String, action: String, pattern: String? = nil, revision: Int64? = nil,
        details: [String: JSONValue] = [:]
    ) {
        self.id = id
        self.at = at
        self.actor = actor
        self.action = action
        self.pattern = pattern
        self.revision = revision
        self.details = details
    }
}

/// Writes and reads the audit log; writes happen in the action's own transaction, so an action is
/// never done without its entry. Admin records every change, auth every debug-token use.
public struct AuditLog: Sendable {
    let database: Database
    let logger: Logger

    public init(database: Database, logger: Logger) {
        self.database = database
        self.logger = logger
    }

    /// Appends `entry` for `appID` on `connection` (inside the caller's transaction).
    public static func append(_ entry: AuditEntry, appID: String, on connection: PostgresConnection, logger: Logger) async throws {
        let details = String(decoding: try JSONEncoder().encode(entry.details), as: UTF8.self)
        try await connection.query(
            """
            INSERT INTO audit_log (app_id, actor, action, pattern, revision, details)
            VALUES (\(appID), \(entry.actor), \(entry.action), \(entry.pattern), \(entry.revision), \(details)::jsonb)
            """, logger: logger)
    }

    /// Entries of `appID` after `afterID`, oldest first, at most `limit`.
    public func entries(appID: String, after afterID: Int64, limit: Int) async throws -> [AuditEntry] {
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

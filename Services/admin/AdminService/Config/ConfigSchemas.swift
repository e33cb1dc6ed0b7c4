import ConfigSchema
import Foundation
import PostgresNIO
import SesameDomain
import SesameHTTP
import SesameStorage

/// A schema attached to the app's configs: to every pattern (`pattern` nil) or to one.
struct AttachedSchema: Sendable {
    let pattern: String?
    let schema: ConfigSchema
    let updatedBy: String
    let updatedAt: Date

    /// How violations name it.
    var scope: String { pattern.map { "pattern '\($0)'" } ?? "app" }
}

/// Config schemas: stored per app and pattern, checked against every upload before it is
/// published, and against what is published before a schema is attached. Uploads of a pattern hold
/// the app's schema lock shared, so no schema changes under a check; attaching one holds it alone.
extension ConfigStore {
    /// The schemas that apply to `pattern` (the app's and the pattern's own), or every schema of
    /// the app when `pattern` is nil.
    func schemas(appID: String, pattern: String?, on connection: PostgresConnection? = nil) async throws -> [AttachedSchema] {
        let query: PostgresQuery = """
            SELECT pattern, schema::text, updated_by, updated_at FROM config_schemas
            WHERE app_id = \(appID) AND (\(pattern)::text IS NULL OR pattern IN ('', \(pattern)))
            ORDER BY pattern
            """
        let rows: PostgresRowSequence
        if let connection {
            rows = try await connection.query(query, logger: logger)
        } else {
            rows = try await database.client.query(query, logger: logger)
        }
        var schemas: [AttachedSchema] = []
        for try await (stored, text, updatedBy, updatedAt) in rows.decode((String, String, String, Date).self) {
            let document = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
            // Checked when attached; a stored schema this build cannot use is a server fault, not the upload's.
            guard let schema = try? ConfigSchema(document) else { throw AdminErrors.storedRuleUnreadable("the schema of \(stored.isEmpty ? "the app" : stored)") }
            schemas.append(AttachedSchema(pattern: stored.isEmpty ? nil : stored, schema: schema, updatedBy: updatedBy, updatedAt: updatedAt))
        }
        return schemas
    }

    /// Every violation of `config` against `schemas`, each naming its schema's scope.
    static func violations(of config: JSONValue, against schemas: [AttachedSchema]) -> [APIError.Violation] {
        schemas.flatMap { attached in
            attached.schema.validate(config).map {
                APIError.Violation(path: $0.path, keyword: $0.keyword, message: $0.message, schema: attached.scope)
            }
        }
    }

    /// Refuses `config` for `pattern` (`422 config_invalid`) unless it matches every schema that
    /// applies, inside the upload's transaction (after the pattern's lock).
    func refuseUnlessValid(_ config: JSONValue, appID: String, pattern: String, on connection: PostgresConnection) async throws {
        try await lockSchemas(appID: appID, exclusive: false, on: connection)
        let violations = Self.violations(of: config, against: try await schemas(appID: appID, pattern: pattern, on: connection))
        guard violations.isEmpty else { throw AdminErrors.configInvalid(violations, what: "The config") }
    }

    /// Attaches `document` to `pattern` (every pattern when nil), replacing any schema there. Refused
    /// when a config published now under it would not match: fix the config first, or the schema.
    func attachSchema(_ document: JSONValue, appID: String, pattern: String?, caller: Caller) async throws {
        let schema: ConfigSchema
        do {
            schema = try ConfigSchema(document)
        } catch {
            throw AdminErrors.schemaInvalid(error.description)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let text = String(decoding: try encoder.encode(document), as: UTF8.self)
        try await database.client.withRefusingTransaction(logger: logger) { connection in
            if let pattern { try await lock(appID: appID, pattern: pattern, on: connection) }
            try await lockSchemas(appID: appID, exclusive: pattern == nil, on: connection)
            let attached = AttachedSchema(pattern: pattern, schema: schema, updatedBy: caller.auditName, updatedAt: Date())
            var violations: [APIError.Violation] = []
            for live in try await livePatterns(appID: appID, on: connection) where pattern == nil || live.pattern == pattern {
                guard !live.zeroKnowledge, let stored = try await stored(appID: appID, pattern: live.pattern, revision: live.revision) else { continue }
                violations += Self.violations(of: stored.config, against: [attached]).map {
                    APIError.Violation(path: $0.path, keyword: $0.keyword, message: "\($0.message) (published revision \(live.revision) of '\(live.pattern)')", schema: $0.schema)
                }
            }
            guard violations.isEmpty else { throw AdminErrors.configInvalid(violations, what: "A config published now") }
            try await connection.query(
                """
                INSERT INTO config_schemas (app_id, pattern, schema, updated_by) VALUES (\(appID), \(pattern ?? ""), \(text)::jsonb, \(caller.auditName))
                ON CONFLICT (app_id, pattern) DO UPDATE SET schema = EXCLUDED.schema, updated_by = EXCLUDED.updated_by, updated_at = now()
                """, logger: logger)
            try await AuditLog.append(
                AuditEntry(
                    actor: caller.auditName, action: "config.schema.set", pattern: pattern,
                    details: ["schema": document]),
                appID: appID, on: connection, logger: logger)
        }
    }

    /// Detaches the schema of `pattern` (the app's when nil); false when there was none.
    func detachSchema(appID: String, pattern: String?, caller: Caller) async throws -> Bool {
        try await database.client.withRefusingTransaction(logger: logger) { connection in
            try await lockSchemas(appID: appID, exclusive: true, on: connection)
            let rows = try await connection.query(
                "DELETE FROM config_schemas WHERE app_id = \(appID) AND pattern = \(pattern ?? "") RETURNING pattern", logger: logger)
            var removed = false
            for try await _ in rows.decode(String.self) { removed = true }
            guard removed else { return false }
            try await AuditLog.append(
                AuditEntry(actor: caller.auditName, action: "config.schema.remove", pattern: pattern), appID: appID, on: connection, logger: logger)
            return true
        }
    }

    /// Uploads hold the app's schema lock shared, attaching the app-wide schema holds it alone.
    private func lockSchemas(appID: String, exclusive: Bool, on connection: PostgresConnection) async throws {
        let key = "schema:\(appID)"
        if exclusive {
            try await connection.query("SELECT pg_advisory_xact_lock(hashtextextended(\(key), 0))", logger: logger)
        } else {
            try await connection.query("SELECT pg_advisory_xact_lock_shared(hashtextextended(\(key), 0))", logger: logger)
        }
    }
}

import ConfigSchema
import Foundation
import PostgresNIO
import SesameDomain
import SesameHTTP
import SesameJSON
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
///
/// A check runs before the transaction begins, on the validation pool (never on the cooperative
/// pool or an event loop; `429 schema_validation_busy` past its share per app), within one
/// `ValidationBudget` (`422 schema_too_complex` past it). Inside the transaction, under the lock,
/// it runs again only if what it read changed.
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
    func violations(of config: JSONValue, against schemas: [AttachedSchema], appID: String) async throws -> [APIError.Violation] {
        try await violations(of: [(config, "")], against: schemas, appID: appID)
    }

    /// Every violation of each config against `schemas`, its message followed by the config's
    /// `suffix`; all of them within one budget, on the validation pool (`SchemaValidationPool`).
    func violations(
        of configs: [(config: JSONValue, suffix: String)], against schemas: [AttachedSchema], appID: String
    ) async throws -> [APIError.Violation] {
        guard !schemas.isEmpty, !configs.isEmpty else { return [] }
        let outcome: Result<[APIError.Violation], ConfigSchema.TooComplex> = try await validations.run(appID: appID) { budget in
            do throws(ConfigSchema.TooComplex) {
                var violations: [APIError.Violation] = []
                for (config, suffix) in configs {
                    for attached in schemas {
                        violations += try attached.schema.validate(config, budget: budget).map {
                            APIError.Violation(path: $0.path, keyword: $0.keyword, message: $0.message + suffix, schema: attached.scope)
                        }
                    }
                }
                return .success(violations)
            } catch {
                return .failure(error)
            }
        }
        switch outcome {
        case .success(let violations): return violations
        case .failure(let tooComplex): throw AdminErrors.schemaTooComplex(tooComplex.reason)
        }
    }

    /// Refuses `config` for `pattern` (`422 config_invalid`) unless it matches every schema that
    /// applies. Checked before the upload's transaction; returns what it checked against, for
    /// `refuseUnlessStillValid`.
    func refuseUnlessValid(_ config: JSONValue, appID: String, pattern: String) async throws -> [AttachedSchema] {
        let schemas = try await schemas(appID: appID, pattern: pattern)
        let violations = try await self.violations(of: config, against: schemas, appID: appID)
        guard violations.isEmpty else { throw AdminErrors.configInvalid(violations, what: "The config") }
        return schemas
    }

    /// Inside the upload's transaction (after the pattern's lock): holds the schema lock shared,
    /// and checks `config` again only when its schemas changed since `checked` was read.
    func refuseUnlessStillValid(
        _ config: JSONValue, checked: [AttachedSchema], appID: String, pattern: String, on connection: PostgresConnection
    ) async throws {
        try await lockSchemas(appID: appID, exclusive: false, on: connection)
        let schemas = try await schemas(appID: appID, pattern: pattern, on: connection)
        guard !Self.same(schemas, checked) else { return }
        let violations = try await self.violations(of: config, against: schemas, appID: appID)
        guard violations.isEmpty else { throw AdminErrors.configInvalid(violations, what: "The config") }
    }

    private static func same(_ left: [AttachedSchema], _ right: [AttachedSchema]) -> Bool {
        left.count == right.count && zip(left, right).allSatisfy { $0.pattern == $1.pattern && $0.updatedAt == $1.updatedAt }
    }

    /// What each live, server-readable pattern publishes now (only `pattern`'s when given), with
    /// the revision it was read at.
    private func publishedConfigs(appID: String, pattern: String?, on connection: PostgresConnection?) async throws -> [(state: PatternState, config: JSONValue)] {
        let live: [PatternState]
        if let connection {
            live = try await livePatterns(appID: appID, on: connection)
        } else {
            live = try await database.client.withConnection { try await livePatterns(appID: appID, on: $0) }
        }
        var published: [(state: PatternState, config: JSONValue)] = []
        for state in live where (pattern == nil || state.pattern == pattern) && !state.zeroKnowledge {
            guard let stored = try await stored(appID: appID, pattern: state.pattern, revision: state.revision) else { continue }
            published.append((state, stored.config))
        }
        return published
    }

    private func violations(
        of published: [(state: PatternState, config: JSONValue)], against attached: AttachedSchema, appID: String
    ) async throws -> [APIError.Violation] {
        try await violations(
            of: published.map { ($0.config, " (published revision \($0.state.revision) of '\($0.state.pattern)')") }, against: [attached],
            appID: appID)
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
        let attached = AttachedSchema(pattern: pattern, schema: schema, updatedBy: caller.auditName, updatedAt: Date())
        let checked = try await publishedConfigs(appID: appID, pattern: pattern, on: nil)
        let violations = try await self.violations(of: checked, against: attached, appID: appID)
        guard violations.isEmpty else { throw AdminErrors.configInvalid(violations, what: "A config published now") }
        try await database.client.withRefusingTransaction(logger: logger) { connection in
            if let pattern { try await lock(appID: appID, pattern: pattern, on: connection) }
            try await lockSchemas(appID: appID, exclusive: pattern == nil, on: connection)
            // Checked again only if a config was published since.
            let published = try await publishedConfigs(appID: appID, pattern: pattern, on: connection)
            if published.map({ "\($0.state.pattern)@\($0.state.revision)" }) != checked.map({ "\($0.state.pattern)@\($0.state.revision)" }) {
                let violations = try await self.violations(of: published, against: attached, appID: appID)
                guard violations.isEmpty else { throw AdminErrors.configInvalid(violations, what: "A config published now") }
            }
            try await connection.query(
                """
                INSERT INTO config_schemas (app_id, pattern, schema, updated_by) VALUES (\(appID), \(pattern ?? ""), \(text)::jsonb, \(caller.auditName))
                ON CONFLICT (app_id, pattern) DO UPDATE SET schema = EXCLUDED.schema, updated_by = EXCLUDED.updated_by, updated_at = now()
                """, logger: logger)
            try await AuditLog.append(
                AuditEntry(
                    actor: caller.auditName, action: .configSchemaSet, pattern: pattern,
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
                AuditEntry(actor: caller.auditName, action: .configSchemaRemove, pattern: pattern), appID: appID, on: connection, logger: logger)
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

import Foundation
import HTTPTypes
import PostgresNIO
import SesameDomain
import SesameEncryption
import SesameHTTP
import SesameJSON
import SesameStorage

/// A relay as listed: its rules and the names of the headers it injects, never their values.
typealias RelayListing = Components.Schemas.Relay

/// An app's attested relays (issue 60): set (made, or changed with its injected headers kept or
/// replaced), listed, removed; each change audited, the injected headers sealed under the master key.
struct RelayStore: Sendable {
    /// At most this many relays per app.
    static let limit = 20

    let database: Database
    let encryption: EnvelopeEncryption
    let logger: Logger

    /// Makes or changes `name`; `headers` nil keeps the ones it has (`400` for a new relay without).
    /// Returns whether it was made.
    func set(appID: String, name: String, rules: RelayRules, headers: [String: String]?, caller: Caller) async throws -> Bool {
        let sealed = try headers.map { headers in
            Data(try encryption.seal(Array(try JSONEncoder().encode(headers)), context: SealingContext.relayHeaders(appID: appID, name: name)))
        }
        let headerNames = headers.map { $0.keys.sorted() }
        return try await database.client.withRefusingTransaction(logger: logger) { connection in
            var exists = false
            for try await _ in try await connection.query("SELECT 1 FROM relays WHERE app_id = \(appID) AND name = \(name) FOR UPDATE", logger: logger) {
                exists = true
            }
            if !exists {
                guard let sealed, let headerNames else { throw APIError.invalidField("headers", "a new relay needs the headers it injects") }
                let counted = try await connection.query("SELECT count(*) FROM relays WHERE app_id = \(appID)", logger: logger)
                for try await count in counted.decode(Int.self) where count >= Self.limit { throw RelayErrors.tooMany(limit: Self.limit) }
                try await connection.query(
                    """
                    INSERT INTO relays (app_id, name, upstream, methods, paths, header_names, headers_ciphertext, least_tier, proof,
                        max_request_bytes, max_response_bytes, timeout_seconds, per_install_per_minute, per_install_per_day, per_app_per_day, updated_by)
                    VALUES (\(appID), \(name), \(rules.upstream), \(rules.methods), \(rules.paths), \(headerNames), \(sealed),
                        \(rules.leastTier.rawValue), \(rules.proof.rawValue), \(rules.maxRequestBytes), \(rules.maxResponseBytes), \(rules.timeoutSeconds),
                        \(rules.perInstallPerMinute), \(rules.perInstallPerDay), \(rules.perAppPerDay), \(caller.auditName))
                    """, logger: logger)
            } else {
                try await connection.query(
                    """
                    UPDATE relays SET upstream = \(rules.upstream), methods = \(rules.methods), paths = \(rules.paths),
                        header_names = coalesce(\(headerNames), header_names), headers_ciphertext = coalesce(\(sealed), headers_ciphertext),
                        least_tier = \(rules.leastTier.rawValue), proof = \(rules.proof.rawValue), max_request_bytes = \(rules.maxRequestBytes),
                        max_response_bytes = \(rules.maxResponseBytes), timeout_seconds = \(rules.timeoutSeconds),
                        per_install_per_minute = \(rules.perInstallPerMinute), per_install_per_day = \(rules.perInstallPerDay),
                        per_app_per_day = \(rules.perAppPerDay), updated_by = \(caller.auditName), updated_at = now()
                    WHERE app_id = \(appID) AND name = \(name)
                    """, logger: logger)
            }
            // Names only: the values are the secrets.
            var details: [String: JSONValue] = [
                "relay": .string(name), "upstream": .string(rules.upstream), "created": .bool(!exists),
            ]
            if let headerNames { details["headersSet"] = .array(headerNames.map(JSONValue.string)) }
            try await AuditLog.append(AuditEntry(actor: caller.auditName, action: .relaySet, details: details), appID: appID, on: connection, logger: logger)
            return !exists
        }
    }

    /// The app's relays by name, or only `name`.
    func list(appID: String, name: String? = nil) async throws -> [RelayListing] {
        let rows = try await database.client.query(
            """
            SELECT name, upstream, methods, paths, header_names, least_tier, proof, max_request_bytes, max_response_bytes, timeout_seconds,
                   per_install_per_minute, per_install_per_day, per_app_per_day, updated_by, updated_at
            FROM relays WHERE app_id = \(appID) AND (\(name)::text IS NULL OR name = \(name)) ORDER BY name
            """, logger: logger)
        var relays: [RelayListing] = []
        for try await row in rows {
            let columns = row.makeRandomAccess()
            relays.append(
                RelayListing(
                    name: try columns[0].decode(String.self), upstream: try columns[1].decode(String.self),
                    methods: try columns[2].decode([String].self), paths: try columns[3].decode([String].self),
                    headerNames: try columns[4].decode([String].self),
                    leastTier: .init(rawValue: try columns[5].decode(String.self)) ?? .attested,
                    proof: RelayListing.proofPayload(rawValue: try columns[6].decode(String.self)) ?? RelayListing.proofPayload.none,
                    maxRequestBytes: try columns[7].decode(Int.self), maxResponseBytes: try columns[8].decode(Int.self),
                    timeoutSeconds: try columns[9].decode(Int.self), perInstallPerMinute: try columns[10].decode(Int?.self),
                    perInstallPerDay: try columns[11].decode(Int?.self), perAppPerDay: try columns[12].decode(Int?.self),
                    updatedBy: try columns[13].decode(String.self), updatedAt: try columns[14].decode(Date.self)))
        }
        return relays
    }

    /// What a proposal to change `name` is made against: when it last changed (`absent` when there
    /// is none), so a proposal overtaken by another change is stale.
    func base(appID: String, name: String) async throws -> String {
        let rows = try await database.client.query(
            "SELECT updated_at FROM relays WHERE app_id = \(appID) AND name = \(name)", logger: logger)
        for try await updated in rows.decode(Date.self) { return String(updated.timeIntervalSince1970) }
        return "absent"
    }

    /// Removes `name`; false when the app has no such relay.
    func remove(appID: String, name: String, caller: Caller) async throws -> Bool {
        try await database.client.withRefusingTransaction(logger: logger) { connection in
            var removed = false
            for try await _ in try await connection.query("DELETE FROM relays WHERE app_id = \(appID) AND name = \(name) RETURNING 1", logger: logger) {
                removed = true
            }
            if removed {
                try await AuditLog.append(
                    AuditEntry(actor: caller.auditName, action: .relayRemove, details: ["relay": .string(name)]), appID: appID, on: connection, logger: logger)
            }
            return removed
        }
    }
}

enum RelayErrors {
    static func tooMany(limit: Int) -> APIError {
        APIError(.conflict, code: AdminErrorCode.tooManyRelays, message: "The app already has \(limit) relays, the most it may: remove one first.")
    }
    static let notFound = APIError(.notFound, code: AdminErrorCode.relayNotFound, message: "The app has no such relay; see GET /v1/admin/relays.")
}

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

    /// Makes or changes `name`; `headers` nil keeps the ones it has (`400` for a new relay without,
    /// and for a move to another origin: the headers are sealed for theirs, `keptHeadersRefusal`).
    /// Returns whether it was made.
    func set(appID: String, name: String, rules: RelayRules, headers: [String: String]?, caller: Caller) async throws -> Bool {
        guard let origin = rules.origin else { throw APIError.invalidField("upstream", "must be an https origin with a base path at most") }
        let sealed = try headers.map { headers in
            Data(try encryption.seal(Array(try JSONEncoder().encode(headers)), context: SealingContext.relayHeaders(appID: appID, name: name, origin: origin)))
        }
        let headerNames = headers.map { $0.keys.sorted() }
        return try await database.client.withRefusingTransaction(logger: logger) { connection in
            let current = try await Self.current(appID: appID, name: name, on: connection, locking: true, logger: logger)
            if current == nil {
                guard let sealed, let headerNames else { throw APIError.invalidField("headers", "a new relay needs the headers it injects") }
                let counted = try await connection.query("SELECT count(*) FROM relays WHERE app_id = \(appID)", logger: logger)
                for try await count in counted.decode(Int.self) where count >= Self.limit { throw RelayErrors.tooMany(limit: Self.limit) }
                try await connection.query(
                    """
                    INSERT INTO relays (app_id, name, upstream, methods, paths, header_names, headers_ciphertext, headers_origin, least_tier, proof,
                        max_request_bytes, max_response_bytes, timeout_seconds, per_install_per_minute, per_install_per_day, per_app_per_day, updated_by)
                    VALUES (\(appID), \(name), \(rules.upstream), \(rules.methods), \(rules.paths), \(headerNames), \(sealed), \(origin),
                        \(rules.leastTier.rawValue), \(rules.proof.rawValue), \(rules.maxRequestBytes), \(rules.maxResponseBytes), \(rules.timeoutSeconds),
                        \(rules.perInstallPerMinute), \(rules.perInstallPerDay), \(rules.perAppPerDay), \(caller.auditName))
                    """, logger: logger)
            } else {
                if headers == nil, let refusal = Self.keptHeadersRefusal(current, movingTo: origin) { throw refusal }
                let sealedFor = sealed == nil ? nil : origin
                try await connection.query(
                    """
                    UPDATE relays SET upstream = \(rules.upstream), methods = \(rules.methods), paths = \(rules.paths),
                        header_names = coalesce(\(headerNames), header_names), headers_ciphertext = coalesce(\(sealed), headers_ciphertext),
                        headers_origin = coalesce(\(sealedFor), headers_origin),
                        least_tier = \(rules.leastTier.rawValue), proof = \(rules.proof.rawValue), max_request_bytes = \(rules.maxRequestBytes),
                        max_response_bytes = \(rules.maxResponseBytes), timeout_seconds = \(rules.timeoutSeconds),
                        per_install_per_minute = \(rules.perInstallPerMinute), per_install_per_day = \(rules.perInstallPerDay),
                        per_app_per_day = \(rules.perAppPerDay), updated_by = \(caller.auditName), updated_at = now()
                    WHERE app_id = \(appID) AND name = \(name)
                    """, logger: logger)
            }
            // Names only: the values are the secrets.
            var details: [String: JSONValue] = [
                "relay": .string(name), "upstream": .string(rules.upstream), "created": .bool(current == nil),
            ]
            if let headerNames { details["headersSet"] = .array(headerNames.map(JSONValue.string)) }
            try await AuditLog.append(AuditEntry(actor: caller.auditName, action: .relaySet, details: details), appID: appID, on: connection, logger: logger)
            return current == nil
        }
    }

    /// A relay as stored: its upstream, the origin its headers are sealed for (nil: sealed before
    /// they were bound, which `bindUnboundHeaders` binds to the upstream's) and their names.
    struct Current: Sendable {
        let upstream: String
        let headersOrigin: String?
        let headerNames: [String]

        /// The origin the headers open for.
        var boundOrigin: String? { headersOrigin ?? RelayRules.origin(of: upstream) }
    }

    /// `name` as stored now, or nil.
    func current(appID: String, name: String) async throws -> Current? {
        try await database.client.withConnection { connection in
            try await Self.current(appID: appID, name: name, on: connection, locking: false, logger: logger)
        }
    }

    private static func current(appID: String, name: String, on connection: PostgresConnection, locking: Bool, logger: Logger) async throws -> Current? {
        let rows = try await connection.query(
            "SELECT upstream, headers_origin, header_names FROM relays WHERE app_id = \(appID) AND name = \(name) \(unescaped: locking ? "FOR UPDATE" : "")",
            logger: logger)
        for try await (upstream, origin, names) in rows.decode((String, String?, [String]).self) {
            return Current(upstream: upstream, headersOrigin: origin, headerNames: names)
        }
        return nil
    }

    /// Why a change that keeps the relay's headers may not be made: it moves the relay to another
    /// origin than the one they are sealed for, where they would be sent (issue 72). Nil when it may.
    static func keptHeadersRefusal(_ current: Current?, movingTo origin: String?) -> APIError? {
        guard let current, let bound = current.boundOrigin, bound != origin else { return nil }
        return RelayErrors.headersRequired(sealedFor: bound, movingTo: origin ?? "another origin")
    }

    /// Seals again, bound to their upstream's origin, the headers of relays sealed before migration
    /// 35 (bound to the relay's name only). Returns how many it bound; a row whose headers do not
    /// open stays unbound (unusable) and is logged.
    func bindUnboundHeaders() async throws -> Int {
        try await database.client.withRefusingTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                "SELECT app_id, name, upstream, headers_ciphertext FROM relays WHERE headers_origin IS NULL FOR UPDATE", logger: logger)
            var unbound: [(appID: String, name: String, upstream: String, sealed: Data)] = []
            for try await (appID, name, upstream, sealed) in rows.decode((String, String, String, Data).self) {
                unbound.append((appID, name, upstream, sealed))
            }
            /// A stored upstream that is no URL (written by hand): its headers open nowhere.
            struct NoOrigin: Error {}
            var bound = 0
            for relay in unbound {
                do {
                    guard let origin = RelayRules.origin(of: relay.upstream) else { throw NoOrigin() }
                    let opened = try encryption.open(relay.sealed, context: SealingContext.relayHeadersUnbound(appID: relay.appID, name: relay.name))
                    let sealed = Data(try encryption.seal(opened, context: SealingContext.relayHeaders(appID: relay.appID, name: relay.name, origin: origin)))
                    try await connection.query(
                        """
                        UPDATE relays SET headers_ciphertext = \(sealed), headers_origin = \(origin)
                        WHERE app_id = \(relay.appID) AND name = \(relay.name)
                        """, logger: logger)
                    bound += 1
                } catch {
                    // The type only: an error's text must not carry a header value.
                    logger.error(
                        "a relay's headers could not be bound to its upstream: it stays unusable until its headers are set again",
                        metadata: ["app": "\(relay.appID)", "relay": "\(relay.name)", "error": "\(type(of: error))"])
                }
            }
            return bound
        }
    }

    /// The app's relays by name, or only `name`.
    func list(appID: String, name: String? = nil) async throws -> [RelayListing] {
        let rows = try await database.client.query(
            """
            SELECT name, upstream, methods, paths, header_names, least_tier, proof, max_request_bytes, max_response_bytes, timeout_seconds,
                   per_install_per_minute, per_install_per_day, per_app_per_day, updated_by, updated_at, headers_origin
            FROM relays WHERE app_id = \(appID) AND (\(name)::text IS NULL OR name = \(name)) ORDER BY name
            """, logger: logger)
        var relays: [RelayListing] = []
        for try await row in rows {
            let columns = row.makeRandomAccess()
            let upstream = try columns[1].decode(String.self)
            relays.append(
                RelayListing(
                    name: try columns[0].decode(String.self), upstream: upstream,
                    methods: try columns[2].decode([String].self), paths: try columns[3].decode([String].self),
                    headerNames: try columns[4].decode([String].self),
                    headersUsable: try columns[15].decode(String?.self).map { $0 == RelayRules.origin(of: upstream) } ?? false,
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
    static func headersRequired(sealedFor bound: String, movingTo origin: String) -> APIError {
        APIError(
            .badRequest, code: AdminErrorCode.relayHeadersRequired,
            message: "The relay's headers are sealed for \(bound) and are never sent to another origin: "
                + "moving it to \(origin) needs its headers given again (headers).")
    }
}

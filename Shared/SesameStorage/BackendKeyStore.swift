import Foundation
import Logging
import PostgresNIO
import SesameDomain
import SesameJSON

/// A backend key as listings show it: never the key, only a hint.
public struct BackendKeyListing: Codable, Sendable, Hashable {
    @LowercaseUUID public var keyId: UUID
    public let name: String
    public let hint: String
    /// The one API audience whose tokens the key consumes; nil: any of the app's.
    public let audience: String?
    public let createdAt: Date
    /// To the minute.
    public let lastUsedAt: Date?
    public let revokedAt: Date?
}

/// Backend keys (`bk_prod_` + 32 random bytes, base64url): what an app's own backend presents to
/// Sesame to consume single-use API tokens and check assertions for that one app, and nothing
/// else. Made, listed and revoked through admin (audited), checked by auth. Only their SHA-256 is
/// stored; the plaintext is shown once, at creation. They live in a table of their own, and admin
/// never looks there when it authenticates, so a leaked backend key cannot manage anything.
public struct BackendKeyStore: Sendable {
    public static let prefix = "bk_prod_"
    /// The prefix and 43 base64url characters.
    static let length = prefix.count + 43

    let database: Database
    let logger: Logger

    public init(database: Database, logger: Logger) {
        self.database = database
        self.logger = logger
    }

    /// What listings show instead of the key: its prefix and last four characters.
    static func hint(_ key: String) -> String { "\(prefix)…\(key.suffix(4))" }

    /// Whether `key` has a backend key's form (nothing is looked up).
    public static func isWellFormed(_ key: String) -> Bool { key.utf8.count == length && key.hasPrefix(prefix) }

    /// The key id and app of a presented live key; nil when it is malformed, unknown or revoked.
    public func authenticate(_ key: String) async throws -> (keyID: UUID, appID: String)? {
        guard Self.isWellFormed(key) else { return nil }
        return try await authenticate(hash: BearerSecret.hash(key))
    }

    /// The key id and app of the live key whose SHA-256 is `hash` (of a well-formed key); nil when
    /// it is unknown or revoked.
    public func authenticate(hash: Data) async throws -> (keyID: UUID, appID: String)? {
        try await HashedCredentials.authenticate(hash: hash, in: .backendKeys, database: database, logger: logger)
    }

    /// Why a key was not made.
    public enum CreateRefusal: Error, Equatable {
        case unknownApp
        /// The audience is not one the app's policy lists.
        case audienceNotListed
    }

    /// Creates a key for `appID` (registered), bound to `audience` (one the app's policy lists)
    /// when given, made and audited as by `actor`; returns the plaintext key, once, and its listing.
    public func create(appID: String, name: String, audience: String?, actor: String) async throws -> (key: String, listing: BackendKeyListing) {
        try await database.client.withRefusingTransaction(logger: logger) { connection in
            let key = BearerSecret.generate(prefix: Self.prefix)
            let keyID = UUID()
            let rows = try await connection.query(
                """
                WITH app AS (
                    SELECT app_id, coalesce(\(audience)::text IS NULL OR policy->'apiAudiences' ? \(audience)::text, false) AS listed
                    FROM apps WHERE app_id = \(appID)
                ), inserted AS (
                    INSERT INTO backend_keys (key_id, app_id, name, key_hash, key_hint, audience, created_by)
                    SELECT \(keyID), app_id, \(name), \(BearerSecret.hash(key)), \(Self.hint(key)), \(audience), \(actor) FROM app WHERE listed
                    RETURNING created_at
                )
                SELECT (SELECT listed FROM app), (SELECT created_at FROM inserted)
                """, logger: logger)
            var createdAt: Date?
            for try await (listed, created) in rows.decode((Bool?, Date?).self) {
                guard let listed else { throw CreateRefusal.unknownApp }
                guard listed else { throw CreateRefusal.audienceNotListed }
                createdAt = created
            }
            guard let createdAt else { throw CreateRefusal.unknownApp }
            var details: [String: JSONValue] = ["keyId": .string(keyID.uuidString.lowercased()), "name": .string(name)]
            if let audience { details["audience"] = .string(audience) }
            try await AuditLog.append(AuditEntry(actor: actor, action: .backendKeyCreate, details: details), appID: appID, on: connection, logger: logger)
            return (
                key,
                BackendKeyListing(
                    keyId: keyID, name: name, hint: Self.hint(key), audience: audience, createdAt: createdAt, lastUsedAt: nil, revokedAt: nil)
            )
        }
    }

    /// Revokes the live key `keyID` of `appID`, audited; nil when there is none. Refused at once
    /// everywhere: auth reads keys from PostgreSQL at each request.
    public func revoke(keyID: UUID, appID: String, actor: String) async throws -> BackendKeyListing? {
        try await database.client.withTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                """
                UPDATE backend_keys SET revoked_at = now()
                WHERE key_id = \(keyID) AND app_id = \(appID) AND revoked_at IS NULL
                RETURNING name, key_hint, audience, created_at, last_used_at, revoked_at
                """, logger: logger)
            for try await (name, hint, audience, createdAt, lastUsedAt, revokedAt) in rows.decode((String, String, String?, Date, Date?, Date?).self) {
                try await AuditLog.append(
                    AuditEntry(actor: actor, action: .backendKeyRevoke, details: ["keyId": .string(keyID.uuidString.lowercased())]),
                    appID: appID, on: connection, logger: logger)
                return BackendKeyListing(
                    keyId: keyID, name: name, hint: hint, audience: audience, createdAt: createdAt, lastUsedAt: lastUsedAt, revokedAt: revokedAt)
            }
            return nil
        }
    }

    /// Every key of `appID`, live ones first, newest first.
    public func list(appID: String) async throws -> [BackendKeyListing] {
        let rows = try await database.client.query(
            """
            SELECT key_id, name, key_hint, audience, created_at, last_used_at, revoked_at FROM backend_keys
            WHERE app_id = \(appID) ORDER BY revoked_at IS NOT NULL, created_at DESC
            """, logger: logger)
        var keys: [BackendKeyListing] = []
        for try await (keyID, name, hint, audience, createdAt, lastUsedAt, revokedAt) in rows.decode((UUID, String, String, String?, Date, Date?, Date?).self) {
            keys.append(
                BackendKeyListing(
                    keyId: keyID, name: name, hint: hint, audience: audience, createdAt: createdAt, lastUsedAt: lastUsedAt, revokedAt: revokedAt))
        }
        return keys
    }
}

import Crypto
import Foundation
import Logging
import PostgresNIO
import SesameDomain
import SesameJSON
import SesameStorage

/// A provisioning key as the management API shows it: never the key, only a hint.
struct ProvisioningKeySummary: Codable, Sendable {
    @LowercaseUUID var keyId: UUID
    let name: String
    let hint: String
}

/// A provisioning key as `GET /v1/admin/keys` lists it: never the key (the document's `ProvisioningKey`).
typealias ProvisioningKeyListing = Components.Schemas.ProvisioningKey

/// Provisioning keys (`sk_prod_` + 32 random bytes, base64url). Only their SHA-256 is stored, so a
/// database leak gives no usable key; the plaintext is shown once, at creation.
struct ProvisioningKeyStore: Sendable {
    static let prefix = "sk_prod_"
    /// The prefix and 43 base64url characters.
    static let length = prefix.count + 43

    let database: Database
    /// The key from which app storage ids are derived (`HMAC-SHA256(pathKey, TEAMID.bundle.id)`).
    let pathKey: SymmetricKey
    let logger: Logger


    /// What listings show instead of the key: its prefix and last four characters.
    static func hint(_ key: String) -> String { "\(prefix)…\(key.suffix(4))" }

    /// The caller a presented key stands for, or nil when it is malformed, unknown or revoked.
    func authenticate(_ key: String) async throws -> Caller? {
        guard key.utf8.count == Self.length else { return nil }
        return try await HashedCredentials.authenticate(key, in: .provisioningKeys, database: database, logger: logger).map {
            .provisioningKey(keyID: $0.keyID, appID: $0.appID)
        }
    }

    /// Creates a key for `app`, registering the app first when `register` allows it; nil when the
    /// app is not registered and may not be. Audited; the plaintext key is returned once. The key
    /// stands for its maker's principal (`Principals`); with `pendingProposal` it is refused until
    /// that proposal is approved (`activate`).
    func create(
        for app: AppIdentifier, name: String, caller: Caller, register: Bool, pendingProposal: UUID? = nil
    ) async throws -> (key: String, summary: ProvisioningKeySummary)? {
        let appID = app.description
        return try await database.client.withTransaction(logger: logger) { connection in
            if register {
                let storageID = Data(HMAC<SHA256>.authenticationCode(for: Data(appID.utf8), using: pathKey))
                try await connection.query(
                    """
                    INSERT INTO apps (app_id, team_id, bundle_id, storage_id) VALUES (\(appID), \(app.teamID), \(app.bundleID), \(storageID))
                    ON CONFLICT (app_id) DO NOTHING
                    """, logger: logger)
            }
            let exists = try await connection.query("SELECT 1 FROM apps WHERE app_id = \(appID)", logger: logger)
            var found = false
            for try await _ in exists { found = true }
            guard found else { return nil }

            let key = BearerSecret.generate(prefix: Self.prefix)
            let keyID = UUID()
            let principal = try await Principals.principalOfKey(keyID, madeBy: caller, on: connection, logger: logger)
            try await connection.query(
                """
                INSERT INTO provisioning_keys (key_id, app_id, name, key_hash, key_hint, created_by, principal, pending_proposal)
                VALUES (\(keyID), \(appID), \(name), \(BearerSecret.hash(key)), \(Self.hint(key)), \(caller.auditName), \(principal), \(pendingProposal))
                """, logger: logger)
            var details: [String: JSONValue] = ["keyId": .string(keyID.uuidString.lowercased()), "name": .string(name)]
            if let pendingProposal { details["pendingProposal"] = .string(pendingProposal.uuidString.lowercased()) }
            try await AuditLog.append(AuditEntry(actor: caller.auditName, action: .keyCreate, details: details), appID: appID, on: connection, logger: logger)
            return (key, ProvisioningKeySummary(keyId: keyID, name: name, hint: Self.hint(key)))
        }
    }

    /// Revokes the key given as itself (`key`) or by its id (`keyID`) if it is an active key of
    /// `appID` (any app for the operator); nil otherwise. Nothing is announced: every admin instance
    /// reads keys from PostgreSQL at each request.
    func revoke(key: String?, keyID: UUID?, appID: String?, caller: Caller) async throws -> ProvisioningKeySummary? {
        let hash = key.map { BearerSecret.hash($0) }
        return try await database.client.withTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                """
                UPDATE provisioning_keys SET revoked_at = now()
                WHERE (key_hash = \(hash) OR key_id = \(keyID)) AND revoked_at IS NULL AND (\(appID)::text IS NULL OR app_id = \(appID))
                RETURNING key_id, app_id, name, key_hint
                """, logger: logger)
            for try await (keyID, keyAppID, name, hint) in rows.decode((UUID, String, String, String).self) {
                try await AuditLog.append(
                    AuditEntry(actor: caller.auditName, action: .keyRevoke, details: ["keyId": .string(keyID.uuidString.lowercased())]),
                    appID: keyAppID, on: connection, logger: logger)
                return ProvisioningKeySummary(keyId: keyID, name: name, hint: hint)
            }
            return nil
        }
    }

    /// Lets the key waiting for `proposal` be used; false when none waits (revoked meanwhile).
    func activate(for proposal: UUID, appID: String) async throws -> Bool {
        let rows = try await database.client.query(
            """
            UPDATE provisioning_keys SET pending_proposal = NULL
            WHERE pending_proposal = \(proposal) AND app_id = \(appID) AND revoked_at IS NULL RETURNING 1
            """, logger: logger)
        for try await _ in rows { return true }
        return false
    }

    /// Every key of `appID`, live ones first, newest first.
    func list(appID: String) async throws -> [ProvisioningKeyListing] {
        let rows = try await database.client.query(
            """
            SELECT key_id, name, key_hint, created_at, last_used_at, revoked_at, created_by, pending_proposal FROM provisioning_keys
            WHERE app_id = \(appID) ORDER BY revoked_at IS NOT NULL, created_at DESC
            """, logger: logger)
        var keys: [ProvisioningKeyListing] = []
        for try await (keyID, name, hint, createdAt, lastUsedAt, revokedAt, createdBy, pending) in rows.decode(
            (UUID, String, String, Date, Date?, Date?, String?, UUID?).self)
        {
            keys.append(
                ProvisioningKeyListing(
                    keyId: keyID.uuidString.lowercased(), name: name, hint: hint, createdAt: createdAt, lastUsedAt: lastUsedAt,
                    revokedAt: revokedAt, createdBy: createdBy, pendingApproval: pending?.uuidString.lowercased()))
        }
        return keys
    }
}

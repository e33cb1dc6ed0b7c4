import Foundation
import Logging
import PostgresNIO
import SesameDomain

/// The lookup the tables of hashed bearer credentials share (provisioning keys, backend keys):
/// find a live row by the SHA-256 of the presented secret, compare once more in constant time, and
/// note its use at most once a minute, so busy callers do not turn reads into writes.
public enum HashedCredentials {
    /// A table of hashed credentials: `key_id`, `app_id`, `key_hash`, `last_used_at`, `revoked_at`.
    public enum Table: String, Sendable {
        case provisioningKeys = "provisioning_keys"
        case backendKeys = "backend_keys"

        /// What makes a row live: not revoked, and (a provisioning key made while the app's
        /// two-person rule is on) approved by a second person.
        var live: String {
            switch self {
            case .provisioningKeys: "revoked_at IS NULL AND pending_proposal IS NULL"
            case .backendKeys: "revoked_at IS NULL"
            }
        }
    }

    /// The key id and app of the live credential `secret`, or nil.
    public static func authenticate(_ secret: String, in table: Table, database: Database, logger: Logger) async throws -> (keyID: UUID, appID: String)? {
        try await authenticate(hash: BearerSecret.hash(secret), in: table, database: database, logger: logger)
    }

    /// The key id and app of the live credential whose SHA-256 is `hash`, or nil.
    public static func authenticate(hash: Data, in table: Table, database: Database, logger: Logger) async throws -> (keyID: UUID, appID: String)? {
        let rows = try await database.client.query(
            "SELECT key_id, app_id, key_hash FROM \(unescaped: table.rawValue) WHERE key_hash = \(hash) AND \(unescaped: table.live)", logger: logger)
        for try await (keyID, appID, stored) in rows.decode((UUID, String, Data).self) {
            // The index found it by hash; compare once more without an early exit.
            guard ConstantTime.equals(stored, hash) else { return nil }
            try await database.client.query(
                """
                UPDATE \(unescaped: table.rawValue) SET last_used_at = now()
                WHERE key_id = \(keyID) AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')
                """, logger: logger)
            return (keyID, appID)
        }
        return nil
    }
}

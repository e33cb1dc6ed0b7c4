import Foundation
import Logging
import PostgresNIO
import SesameDomain
import SesameJSON

/// Revoking an attested key, as admin does for a person and auth does for a risk metric: the key, every
/// refresh-token family it holds, and the audit entry, in the caller's transaction. The database notes
/// the key's revocation as an app change (a trigger), which every delivery instance hears at once.
public enum AttestedKeyRevocation {
    /// Revokes `keyID` of `appID` if it is live, with `reason`, audited as `action` by `actor` with
    /// `details` (the key id is added); false when there was no such live key.
    public static func revoke(
        _ keyID: [UInt8], appID: String, reason: String, action: AuditAction, actor: String, details: [String: JSONValue],
        on connection: PostgresConnection, logger: Logger
    ) async throws -> Bool {
        let rows = try await connection.query(
            """
            UPDATE attested_keys SET revoked_at = now(), revoked_reason = \(reason)
            WHERE app_id = \(appID) AND key_id = \(Data(keyID)) AND revoked_at IS NULL RETURNING 1
            """, logger: logger)
        var revoked = false
        for try await _ in rows { revoked = true }
        guard revoked else { return false }
        try await connection.query(
            """
            UPDATE refresh_token_families SET revoked_at = now(), revoked_reason = 'device revoked'
            WHERE key_id = \(Data(keyID)) AND revoked_at IS NULL
            """, logger: logger)
        try await AuditLog.append(
            AuditEntry(actor: actor, action: action, details: details.merging(["keyId": .string(Base64.urlEncode(keyID))]) { $1 }),
            appID: appID, on: connection, logger: logger)
        return true
    }
}

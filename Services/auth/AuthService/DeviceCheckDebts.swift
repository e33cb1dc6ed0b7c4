import Foundation
import Logging
import PostgresNIO
import SesameJSON
import SesameStorage

/// A key's DeviceCheck verdict owed: its attest was admitted because Apple could not be asked.
struct OwedDeviceCheck: Sendable {
    let keyID: [UInt8]
    let appID: String
    let development: Bool
    let sealedToken: Data
    let failures: Int
    let attestedAt: Date
}

/// What `attested_keys` keeps of DeviceCheck: each device token's digest (a token counts for one key)
/// and the verdicts owed (`device_check_due_at`).
struct DeviceCheckDebts: Sendable {
    let database: Database
    let logger: Logger

    /// Whether a key of `appID` was attested with the token whose SHA-256 is `digest`.
    func isSpent(_ digest: Data, appID: String) async throws -> Bool {
        let rows = try await database.client.query(
            "SELECT 1 FROM attested_keys WHERE app_id = \(appID) AND device_token_digest = \(digest)", logger: logger)
        for try await _ in rows { return true }
        return false
    }

    /// Up to `limit` owed checks that are due, at most `perApp` of one app, each held for ten
    /// minutes (another replica skips it meanwhile).
    func claim(limit: Int, perApp: Int) async throws -> [OwedDeviceCheck] {
        let rows = try await database.client.query(
            """
            UPDATE attested_keys k SET device_check_due_at = now() + interval '10 minutes'
            FROM (
                SELECT key_id FROM (
                    SELECT d.key_id, d.device_check_due_at,
                        row_number() OVER (PARTITION BY d.app_id ORDER BY d.device_check_due_at) AS place
                    FROM attested_keys d
                    WHERE d.device_check_due_at <= now() AND d.revoked_at IS NULL AND d.device_token_ciphertext IS NOT NULL
                ) ranked
                WHERE place <= \(perApp) ORDER BY device_check_due_at LIMIT \(limit)
            ) due
            WHERE k.key_id = due.key_id AND k.device_check_due_at <= now()
            RETURNING k.key_id, k.app_id, k.environment, k.device_token_ciphertext, k.device_check_failures, k.created_at
            """, logger: logger)
        var claimed: [OwedDeviceCheck] = []
        for try await (keyID, appID, environment, sealed, failures, created) in rows.decode((Data, String, String, Data, Int, Date).self) {
            claimed.append(
                OwedDeviceCheck(
                    keyID: Array(keyID), appID: appID, development: environment == "development", sealedToken: sealed, failures: failures,
                    attestedAt: created))
        }
        return claimed
    }

    /// The verdict came (or is no longer owed): nothing more to ask.
    func settle(_ keyID: [UInt8]) async throws {
        try await database.client.query(
            "UPDATE attested_keys SET device_check_due_at = NULL, device_check_failures = 0 WHERE key_id = \(Data(keyID))", logger: logger)
    }

    /// Apple could not be asked again: due at `next`, after `failures` in a row.
    func retry(_ keyID: [UInt8], failures: Int, next: Date) async throws {
        try await database.client.query(
            "UPDATE attested_keys SET device_check_due_at = \(next), device_check_failures = \(failures) WHERE key_id = \(Data(keyID))",
            logger: logger)
    }

    /// Revokes a key whose device turned out banned, audited as `device.ban_revoke` (sent to
    /// webhooks as a revocation); false when it was not live.
    func revokeBanned(_ keyID: [UInt8], appID: String, bit: Int) async throws -> Bool {
        try await database.client.withTransaction(logger: logger) { connection in
            try await AttestedKeyRevocation.revoke(
                keyID, appID: appID, reason: "its device's DeviceCheck bit \(bit) is set (a ban), found after the attest", action: .deviceBanRevoke,
                actor: "sesame", details: ["bit": .integer(Int64(bit))], on: connection, logger: logger)
        }
    }
}

import Foundation
import Logging
import PostgresNIO
import SesameDomain
import SesameHTTP
import SesameJSON
import SesameStorage

/// An attested install as the management API lists it (the document's `Device`).
typealias DeviceListing = Components.Schemas.Device

/// Attested installs: listed a page at a time, and revoked (the key and its refresh-token families;
/// the database notes the revocation as an app change, which every delivery instance hears at once).
struct DeviceStore: Sendable {
    let database: Database
    let logger: Logger

    /// Up to `limit` devices of `appID`, newest first, after the one whose key id is `after`.
    func list(appID: String, after: [UInt8]?, limit: Int) async throws -> [DeviceListing] {
        let cursor = after.map { Data($0) }
        let rows = try await database.client.query(
            """
            SELECT key_id, environment, app_version, created_at, last_used_at, counter, revoked_at, revoked_reason,
                device_token_ciphertext IS NOT NULL,
                (SELECT banned_at FROM device_bans b WHERE b.app_id = k.app_id AND b.key_id = k.key_id),
                receipt_state, risk_metric, risk_at
            FROM attested_keys k
            WHERE app_id = \(appID) AND (\(cursor)::bytea IS NULL OR (created_at, key_id) < (
                SELECT created_at, key_id FROM attested_keys WHERE app_id = \(appID) AND key_id = \(cursor)))
            ORDER BY created_at DESC, key_id DESC LIMIT \(limit)
            """, logger: logger)
        var devices: [DeviceListing] = []
        for try await (keyID, environment, appVersion, firstSeen, lastSeen, counter, revokedAt, reason, hasDeviceToken, bannedAt, receipt, risk, riskAt)
            in rows.decode((Data, String, String?, Date, Date?, Int64, Date?, String?, Bool, Date?, String, Int?, Date?).self)
        {
            // Stored from the attestation's own environment: another value is the database's fault.
            guard let environment = DeviceListing.environmentPayload(rawValue: environment) else { throw APIError.internalError }
            devices.append(
                DeviceListing(
                    keyId: Base64.urlEncode(keyID), environment: environment, tier: .attested, appVersion: appVersion, firstSeen: firstSeen,
                    lastSeen: lastSeen, counter: counter, revokedAt: revokedAt, revokedReason: reason, bannedAt: bannedAt,
                    deviceCheck: hasDeviceToken, receipt: DeviceListing.receiptPayload(rawValue: receipt), riskMetric: risk, riskAt: riskAt))
        }
        return devices
    }

    /// What a device revocation's proposal is made against: `live`, `revoked` or `unknown`.
    func standing(appID: String, keyID: [UInt8]) async throws -> String {
        let rows = try await database.client.query(
            "SELECT revoked_at IS NOT NULL FROM attested_keys WHERE app_id = \(appID) AND key_id = \(Data(keyID))", logger: logger)
        for try await revoked in rows.decode(Bool.self) { return revoked ? "revoked" : "live" }
        return "unknown"
    }

    /// Revokes the live device `keyID` of `appID` and every refresh-token family it holds, audits
    /// it and announces it; false when there is no such live device.
    func revoke(appID: String, keyID: [UInt8], reason: String, actor: String) async throws -> Bool {
        try await database.client.withTransaction(logger: logger) { connection in
            try await AttestedKeyRevocation.revoke(
                keyID, appID: appID, reason: reason, action: .deviceRevoke, actor: actor, details: ["reason": .string(reason)], on: connection,
                logger: logger)
        }
    }

    /// What a ban needs of a device of `appID`: the DeviceCheck token it sent when it attested
    /// (sealed; nil when it sent none) and whether it attested in the development environment;
    /// nil when the app has no such device.
    func banTarget(appID: String, keyID: [UInt8]) async throws -> (sealedDeviceToken: Data?, development: Bool)? {
        let rows = try await database.client.query(
            "SELECT device_token_ciphertext, environment FROM attested_keys WHERE app_id = \(appID) AND key_id = \(Data(keyID))", logger: logger)
        for try await (sealed, environment) in rows.decode((Data?, String).self) { return (sealed, environment == "development") }
        return nil
    }

    /// Records that `keyID`'s device is banned with `bit` (Apple was told), revokes the key if it is
    /// still live, and audits both, in one transaction.
    func ban(appID: String, keyID: [UInt8], bit: Int, reason: String, actor: String) async throws {
        let subject = Base64.urlEncode(keyID)
        try await database.client.withTransaction(logger: logger) { connection in
            // A key revoked before is banned all the same: the ban is what changes.
            _ = try await AttestedKeyRevocation.revoke(
                keyID, appID: appID, reason: reason, action: .deviceRevoke, actor: actor, details: ["reason": .string(reason)], on: connection,
                logger: logger)
            try await connection.query(
                """
                INSERT INTO device_bans (app_id, key_id, bit, reason, banned_by) VALUES (\(appID), \(Data(keyID)), \(Int16(bit)), \(reason), \(actor))
                ON CONFLICT (app_id, key_id) DO UPDATE SET bit = EXCLUDED.bit, reason = EXCLUDED.reason, banned_by = EXCLUDED.banned_by, banned_at = now()
                """, logger: logger)
            try await AuditLog.append(
                AuditEntry(actor: actor, action: .deviceBan, details: ["keyId": .string(subject), "bit": .integer(Int64(bit)), "reason": .string(reason)]),
                appID: appID, on: connection, logger: logger)
        }
    }

    /// The bit `keyID`'s device is banned with; nil when it is not banned.
    func banBit(appID: String, keyID: [UInt8]) async throws -> Int? {
        let rows = try await database.client.query(
            "SELECT bit FROM device_bans WHERE app_id = \(appID) AND key_id = \(Data(keyID))", logger: logger)
        for try await bit in rows.decode(Int16.self) { return Int(bit) }
        return nil
    }

    /// Forgets `keyID`'s ban (Apple was told) and audits it; false when it was not banned.
    func unban(appID: String, keyID: [UInt8], reason: String, actor: String) async throws -> Bool {
        try await database.client.withTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                "DELETE FROM device_bans WHERE app_id = \(appID) AND key_id = \(Data(keyID)) RETURNING 1", logger: logger)
            var removed = false
            for try await _ in rows { removed = true }
            guard removed else { return false }
            try await AuditLog.append(
                AuditEntry(actor: actor, action: .deviceUnban, details: ["keyId": .string(Base64.urlEncode(keyID)), "reason": .string(reason)]),
                appID: appID, on: connection, logger: logger)
            return true
        }
    }
}

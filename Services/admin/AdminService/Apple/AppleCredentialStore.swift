import Foundation
import Logging
import PostgresNIO
import SesameApple
import SesameEncryption
import SesameJSON
import SesameStorage

/// Each app's DeviceCheck key: the private key sealed under the master key (bound to the app), its id
/// and who set it in clear, and what Apple made of it when last asked. Never read back to a person.
struct AppleCredentialStore: Sendable {
    let database: Database
    let encryption: EnvelopeEncryption
    let logger: Logger

    /// The team of `appID`, whose DeviceCheck key it must be; nil when there is no such app.
    func teamID(of appID: String) async throws -> String? {
        let rows = try await database.client.query("SELECT team_id FROM apps WHERE app_id = \(appID)", logger: logger)
        for try await teamID in rows.decode(String.self) { return teamID }
        return nil
    }

    /// Stores `key` for `appID` in place of any other, and audits it (the key id, never the key).
    func set(_ key: DeviceCheckKey, appID: String, caller: Caller) async throws {
        let sealed = Data(try encryption.seal(Array(key.privateKeyPEM.utf8), context: SealingContext.appleCredentials(appID: appID)))
        try await database.client.withTransaction(logger: logger) { connection in
            try await connection.query(
                """
                INSERT INTO apple_credentials (app_id, key_id, private_key_ciphertext, set_by)
                VALUES (\(appID), \(key.keyID), \(sealed), \(caller.auditName))
                ON CONFLICT (app_id) DO UPDATE SET key_id = EXCLUDED.key_id, private_key_ciphertext = EXCLUDED.private_key_ciphertext,
                    set_by = EXCLUDED.set_by, set_at = now(), checked_at = NULL, check_outcome = NULL, check_message = NULL
                """, logger: logger)
            try await AuditLog.append(
                AuditEntry(actor: caller.auditName, action: .appleCredentialsSet, details: ["keyId": .string(key.keyID)]),
                appID: appID, on: connection, logger: logger)
        }
    }

    /// The key as set, without the key; nil when none is.
    func listing(appID: String) async throws -> AppleCredentials? {
        let rows = try await database.client.query(
            """
            SELECT c.key_id, a.team_id, c.set_by, c.set_at, c.checked_at, c.check_outcome, c.check_message
            FROM apple_credentials c JOIN apps a USING (app_id) WHERE c.app_id = \(appID)
            """, logger: logger)
        for try await (keyID, teamID, setBy, setAt, checkedAt, outcome, message) in rows.decode((String, String, String, Date, Date?, String?, String?).self) {
            var check: AppleCredentialsCheck?
            if let checkedAt, let outcome = outcome.flatMap(AppleCredentialsCheck.outcomePayload.init(rawValue:)), let message {
                check = AppleCredentialsCheck(outcome: outcome, message: message, checkedAt: checkedAt)
            }
            return AppleCredentials(keyId: keyID, teamId: teamID, setBy: setBy, setAt: setAt, check: check)
        }
        return nil
    }

    /// Keeps what Apple made of the key with id `keyID` (unless it was replaced meanwhile).
    func record(_ check: DeviceCheckClient.CredentialCheck, keyID: String, appID: String) async throws {
        try await database.client.query(
            """
            UPDATE apple_credentials SET checked_at = now(), check_outcome = \(check.outcome), check_message = \(check.message)
            WHERE app_id = \(appID) AND key_id = \(keyID)
            """, logger: logger)
    }

    /// Removes the key and audits it; false when none was set.
    func remove(appID: String, caller: Caller) async throws -> Bool {
        try await database.client.withTransaction(logger: logger) { connection in
            let rows = try await connection.query("DELETE FROM apple_credentials WHERE app_id = \(appID) RETURNING key_id", logger: logger)
            var removed: String?
            for try await keyID in rows.decode(String.self) { removed = keyID }
            guard let removed else { return false }
            try await AuditLog.append(
                AuditEntry(actor: caller.auditName, action: .appleCredentialsRemove, details: ["keyId": .string(removed)]),
                appID: appID, on: connection, logger: logger)
            return true
        }
    }
}

import AppAttest
import Foundation
import Logging
import PostgresNIO
import SesameConfiguration
import SesameStorage

/// An attested App Attest key, as stored.
struct AttestedKey: Sendable {
    let keyID: [UInt8]
    let appID: String
    let publicKey: [UInt8]
    let counter: UInt32
    let environment: String
    let revoked: Bool
}

/// App Attest keys that passed attestation, with their assertion counters.
struct AttestedKeyStore: Sendable {
    let database: Database
    let logger: Logger

    /// Stores a newly attested key and opens its first refresh-token family, in one transaction.
    /// - Returns: the family id, or nil when the key id was attested before (a key attests once).
    func register(
        keyID: [UInt8], appID: String, attestation: AppAttestVerifier.Attestation, appVersion: String?, familyLifetime: Duration
    ) async throws -> UUID? {
        try await database.client.withTransaction(logger: logger) { connection in
            let inserted = try await connection.query(
                """
                INSERT INTO attested_keys (key_id, app_id, public_key, receipt, counter, environment, app_version, last_used_at)
                VALUES (\(Data(keyID)), \(appID), \(Data(attestation.publicKey)), \(Data(attestation.receipt)),
                        \(Int64(attestation.counter)), \(attestation.environment.rawValue), \(appVersion), now())
                ON CONFLICT (key_id) DO NOTHING RETURNING 1
                """, logger: logger)
            var isNew = false
            for try await _ in inserted { isNew = true }
            guard isNew else { return nil }
            let family = UUID()
            try await connection.query(
                """
                INSERT INTO refresh_token_families (family_id, app_id, key_id, expires_at)
                VALUES (\(family), \(appID), \(Data(keyID)), now() + make_interval(secs => \(familyLifetime.wholeSeconds)))
                """, logger: logger)
            return family
        }
    }

    func key(_ keyID: [UInt8]) async throws -> AttestedKey? {
        let rows = try await database.client.query(
            """
            SELECT app_id, public_key, counter, environment, revoked_at IS NOT NULL FROM attested_keys WHERE key_id = \(Data(keyID))
            """, logger: logger)
        for try await (appID, publicKey, counter, environment, revoked) in rows.decode((String, Data, Int64, String, Bool).self) {
            return AttestedKey(
                keyID: keyID, appID: appID, publicKey: Array(publicKey), counter: UInt32(clamping: counter), environment: environment,
                revoked: revoked)
        }
        return nil
    }

    /// Moves the key's counter to `counter` if that is still an increase: two requests racing with
    /// the same assertion cannot both pass.
    func advanceCounter(of keyID: [UInt8], to counter: UInt32) async throws -> Bool {
        let rows = try await database.client.query(
            """
            UPDATE attested_keys SET counter = \(Int64(counter)), last_used_at = now()
            WHERE key_id = \(Data(keyID)) AND counter < \(Int64(counter)) RETURNING 1
            """, logger: logger)
        for try await _ in rows { return true }
        return false
    }

    /// Records a refresh: when the device was last seen, and the version it now reports.
    func recordRefresh(of keyID: [UInt8], appVersion: String?) async throws {
        try await database.client.query(
            """
            UPDATE attested_keys SET last_used_at = now(), app_version = coalesce(\(appVersion), app_version)
            WHERE key_id = \(Data(keyID))
            """, logger: logger)
    }
}

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

    /// Stores a newly attested key and opens its first refresh-token family, in one statement.
    /// - Returns: the family id, or nil when the key id was attested before (a key attests once).
    func register(
        keyID: [UInt8], appID: String, attestation: AppAttestVerifier.Attestation, appVersion: String?, familyLifetime: Duration
    ) async throws -> UUID? {
        let family = UUID()
        let rows = try await database.client.query(
            """
            WITH attested AS (
                INSERT INTO attested_keys (key_id, app_id, public_key, receipt, counter, environment, app_version, last_used_at)
                VALUES (\(Data(keyID)), \(appID), \(Data(attestation.publicKey)), \(Data(attestation.receipt)),
                        \(Int64(attestation.counter)), \(attestation.environment.rawValue), \(appVersion), now())
                ON CONFLICT (key_id) DO NOTHING RETURNING key_id
            )
            INSERT INTO refresh_token_families (family_id, app_id, key_id, expires_at)
            SELECT \(family), \(appID), key_id, now() + make_interval(secs => \(familyLifetime.wholeSeconds)) FROM attested
            RETURNING family_id
            """, logger: logger)
        for try await _ in rows { return family }
        return nil
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

}

import AppAttest
import Foundation
import Logging
import PostgresNIO
import SesameConfiguration
import SesameStorage

/// App Attest keys that passed attestation (their assertions: `AssertionKeys`, in SesameAssertions).
struct AttestedKeyStore: Sendable {
    let database: Database
    let logger: Logger

    /// Stores a newly attested key and opens its first refresh-token family, in one statement.
    /// - Returns: the family id, or nil when the key id was attested before (a key attests once), or
    ///   its device token was spent by another key meanwhile.
    func register(
        keyID: [UInt8], appID: String, attestation: AppAttestVerifier.Attestation, appVersion: String?, deviceToken: DeviceBanCheck.Admitted?,
        familyLifetime: Duration
    ) async throws -> UUID? {
        let family = UUID()
        let statement = RegisterStatement(
            keyID: Data(keyID), appID: appID, publicKey: Data(attestation.publicKey), receipt: Data(attestation.receipt),
            counter: Int64(attestation.counter), environment: attestation.environment.rawValue, appVersion: appVersion, deviceToken: deviceToken,
            family: family,
            familyLifetimeSeconds: familyLifetime.wholeSeconds)
        for try await _ in try await database.client.execute(statement, logger: logger) { return family }
        return nil
    }

}

/// `AttestedKeyStore.register`, prepared once per connection: every attest runs it.
private struct RegisterStatement: PostgresPreparedStatement {
    static let sql = """
        WITH attested AS (
            INSERT INTO attested_keys (
                key_id, app_id, public_key, receipt, counter, environment, app_version, device_token_ciphertext, last_used_at, receipt_redeem_after,
                device_token_digest, device_check_due_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $10, now(), now(), $11, CASE WHEN $12 THEN now() + interval '1 minute' END)
            ON CONFLICT DO NOTHING RETURNING key_id
        )
        INSERT INTO refresh_token_families (family_id, app_id, key_id, expires_at)
        SELECT $8, $2, key_id, now() + make_interval(secs => $9) FROM attested
        RETURNING family_id
        """
    typealias Row = UUID

    let keyID: Data
    let appID: String
    let publicKey: Data
    let receipt: Data
    let counter: Int64
    let environment: String
    let appVersion: String?
    /// The install's DeviceCheck token; nil when it sent none.
    let deviceToken: DeviceBanCheck.Admitted?
    let family: UUID
    let familyLifetimeSeconds: Int64

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 12)
        try bindings.append(keyID)
        bindings.append(appID)
        try bindings.append(publicKey)
        try bindings.append(receipt)
        bindings.append(counter)
        bindings.append(environment)
        bindings.append(appVersion)
        bindings.append(family)
        bindings.append(Double(familyLifetimeSeconds))
        try bindings.append(deviceToken?.sealed)
        try bindings.append(deviceToken?.digest)
        bindings.append(deviceToken?.checkOwed ?? false)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(UUID.self) }
}

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

extension AttestedKey {
    /// A key's columns as the statements that read one select them, after its id: `app_id`,
    /// `public_key`, `counter`, `environment`, whether it is revoked.
    typealias StoredColumns = (String, Data, Int64, String, Bool)

    init(keyID: [UInt8], stored: StoredColumns) {
        let (appID, publicKey, counter, environment, revoked) = stored
        self.init(
            keyID: keyID, appID: appID, publicKey: Array(publicKey), counter: UInt32(clamping: counter), environment: environment,
            revoked: revoked)
    }
}

/// App Attest keys that passed attestation, with their assertion counters.
struct AttestedKeyStore: Sendable {
    let database: Database
    let logger: Logger

    /// Stores a newly attested key and opens its first refresh-token family, in one statement.
    /// - Returns: the family id, or nil when the key id was attested before (a key attests once).
    func register(
        keyID: [UInt8], appID: String, attestation: AppAttestVerifier.Attestation, appVersion: String?, deviceToken: Data?,
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

    func key(_ keyID: [UInt8]) async throws -> AttestedKey? {
        for try await stored in try await database.client.execute(KeyStatement(keyID: Data(keyID)), logger: logger) {
            return AttestedKey(keyID: keyID, stored: stored)
        }
        return nil
    }

    /// Moves the key's counter to `counter` if that is still an increase: two requests racing with
    /// the same assertion cannot both pass.
    func advanceCounter(of keyID: [UInt8], to counter: UInt32) async throws -> Bool {
        for try await _ in try await database.client.execute(AdvanceCounterStatement(keyID: Data(keyID), counter: Int64(counter)), logger: logger) {
            return true
        }
        return false
    }
}

/// `AttestedKeyStore.register`, prepared once per connection: every attest runs it.
private struct RegisterStatement: PostgresPreparedStatement {
    static let sql = """
        WITH attested AS (
            INSERT INTO attested_keys (
                key_id, app_id, public_key, receipt, counter, environment, app_version, device_token_ciphertext, last_used_at, receipt_redeem_after)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $10, now(), now())
            ON CONFLICT (key_id) DO NOTHING RETURNING key_id
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
    /// The install's DeviceCheck token, sealed; nil when it sent none.
    let deviceToken: Data?
    let family: UUID
    let familyLifetimeSeconds: Int64

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 10)
        try bindings.append(keyID)
        bindings.append(appID)
        try bindings.append(publicKey)
        try bindings.append(receipt)
        bindings.append(counter)
        bindings.append(environment)
        bindings.append(appVersion)
        bindings.append(family)
        bindings.append(Double(familyLifetimeSeconds))
        try bindings.append(deviceToken)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(UUID.self) }
}

// An assertion's two statements, prepared once per connection (refresh with an assertion and the
// backend's assertion check run both).

private struct KeyStatement: PostgresPreparedStatement {
    static let sql = "SELECT app_id, public_key, counter, environment, revoked_at IS NOT NULL FROM attested_keys WHERE key_id = $1"
    typealias Row = AttestedKey.StoredColumns
    let keyID: Data

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 1)
        try bindings.append(keyID)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}

private struct AdvanceCounterStatement: PostgresPreparedStatement {
    static let sql = "UPDATE attested_keys SET counter = $2, last_used_at = now() WHERE key_id = $1 AND counter < $2 RETURNING 1"
    typealias Row = Int32
    let keyID: Data
    let counter: Int64

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 2)
        try bindings.append(keyID)
        bindings.append(counter)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Int32.self) }
}

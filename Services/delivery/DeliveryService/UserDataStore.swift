import Crypto
import Foundation
import Logging
import PostgresNIO
import SesameEncryption
import SesameStorage

/// Per-user data: stored per app under a keyed hash of the user id (the raw id is never stored),
/// the body encrypted at rest, with a version for optimistic concurrency.
struct UserDataStore: Sendable {
    let database: Database
    let encryption: EnvelopeEncryption
    /// Holds the key user ids are hashed with, which must never change.
    let keys: ServiceKeyStore
    let logger: Logger

    /// What a conditional write found.
    enum WriteOutcome: Sendable, Equatable {
        case written(version: Int64)
        /// The stored version is not the one the client expected.
        case conflict
        /// A new document would exceed the app's quota.
        case quotaExceeded
    }

    func userHash(appID: String, userID: String) async throws -> Data {
        let key = try await keys.key(named: "user-id-hash")
        return Data(HMAC<SHA256>.authenticationCode(for: Data("\(appID)\u{0}\(userID)".utf8), using: key))
    }

    /// The stored body and its version, if any.
    func read(appID: String, userID: String) async throws -> (body: [UInt8], version: Int64)? {
        let hash = try await userHash(appID: appID, userID: userID)
        let rows = try await database.client.query(
            "SELECT body, version FROM user_data WHERE app_id = \(appID) AND user_hash = \(hash)", logger: logger)
        for try await (sealed, version) in rows.decode((Data, Int64).self) {
            return (try encryption.open(sealed, context: SealingContext.userDocument(appID: appID, userHash: hash)), version)
        }
        return nil
    }

    /// Writes `body`. With `expectedVersion` only if the stored version is that one (0: only if
    /// nothing is stored yet); without it, whatever is stored. A new document is created only
    /// while the app holds fewer than `quota` (concurrent creations may overshoot by a few).
    func write(appID: String, userID: String, body: [UInt8], expectedVersion: Int64?, quota: Int) async throws -> WriteOutcome {
        let hash = try await userHash(appID: appID, userID: userID)
        let sealed = Data(try encryption.seal(body, context: SealingContext.userDocument(appID: appID, userHash: hash)))
        if expectedVersion != 0 {
            let rows = try await database.client.query(
                """
                UPDATE user_data SET body = \(sealed), version = version + 1, updated_at = now()
                WHERE app_id = \(appID) AND user_hash = \(hash) AND (\(expectedVersion)::bigint IS NULL OR version = \(expectedVersion))
                RETURNING version
                """, logger: logger)
            for try await version in rows.decode(Int64.self) { return .written(version: version) }
            if expectedVersion != nil { return .conflict }
        }
        let rows = try await database.client.query(
            """
            INSERT INTO user_data (app_id, user_hash, body)
            SELECT \(appID), \(hash), \(sealed) WHERE (SELECT count(*) FROM user_data WHERE app_id = \(appID)) < \(quota)
            ON CONFLICT (app_id, user_hash) DO NOTHING RETURNING version
            """, logger: logger)
        for try await version in rows.decode(Int64.self) { return .written(version: version) }
        // Either someone created it meanwhile (a conflict), or the quota is reached.
        return try await read(appID: appID, userID: userID) != nil ? .conflict : .quotaExceeded
    }
}

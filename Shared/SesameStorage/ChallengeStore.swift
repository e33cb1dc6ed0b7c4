import Crypto
import Foundation
import Logging
import PostgresNIO
import SesameConfiguration

/// One-time challenges in PostgreSQL, each kind under its own `purpose` (App Attest's, the
/// dashboard's passkey ceremonies): a challenge issued for one purpose never redeems for another.
/// Only SHA-256 of a nonce is stored, so a database reader cannot redeem one; consuming deletes
/// the row, which makes a nonce single use even under concurrency.
public struct ChallengeStore: Sendable {
    let database: Database
    /// How long a challenge stays redeemable.
    public let lifetime: Duration
    let purpose: String
    let logger: Logger

    public init(database: Database, lifetime: Duration, purpose: String, logger: Logger) {
        self.database = database
        self.lifetime = lifetime
        self.purpose = purpose
        self.logger = logger
    }

    /// A fresh 32-byte nonce, stored until it expires.
    public func issue() async throws -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        let nonce = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let hash = Data(SHA256.hash(data: nonce))
        try await database.client.query(
            """
            INSERT INTO challenges (nonce_hash, purpose, expires_at)
            VALUES (\(hash), \(purpose), now() + make_interval(secs => \(lifetime.wholeSeconds)))
            """, logger: logger)
        return nonce
    }

    /// Redeems `nonce`: true exactly once for an unexpired nonce issued for this purpose.
    public func consume(_ nonce: [UInt8]) async throws -> Bool {
        guard let redemption = redemption(of: nonce) else { return false }
        let rows = try await database.client.execute(ConsumeStatement(hash: redemption.hash, purpose: redemption.purpose), logger: logger)
        for try await unexpired in rows { return unexpired }
        return false
    }

    /// A nonce as the statement that redeems it binds it: SHA-256 of the nonce, and the purpose.
    public struct Redemption: Sendable {
        public let hash: Data
        public let purpose: String
    }

    /// What a statement redeeming `nonce` along with other writes binds (`redeemingSQL`); nil for a
    /// nonce that cannot have been issued (not 32 bytes).
    public func redemption(of nonce: [UInt8]) -> Redemption? {
        guard nonce.count == 32 else { return nil }
        return Redemption(hash: Data(SHA256.hash(data: nonce)), purpose: purpose)
    }

    /// `consume` as SQL, for a statement that redeems a challenge along with other writes (its
    /// `fresh` column is what `consume` returns), `hash` and `purpose` naming its parameters.
    public static func redeemingSQL(hash: String, purpose: String) -> String {
        "DELETE FROM challenges WHERE nonce_hash = \(hash) AND purpose = \(purpose) RETURNING expires_at > now() AS fresh"
    }

    /// `consume`, prepared once per connection: an unattested install's admission, a refused
    /// assertion and the dashboard's passkey ceremonies run it (attest and asserted refresh redeem
    /// their challenge inside their own statements).
    private struct ConsumeStatement: PostgresPreparedStatement {
        static let sql = redeemingSQL(hash: "$1", purpose: "$2")
        typealias Row = Bool
        let hash: Data
        let purpose: String

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 2)
            try bindings.append(hash)
            bindings.append(purpose)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Bool.self) }
    }

    /// Removes expired challenges of every purpose; returns how many.
    public func pruneExpired() async throws -> Int {
        let rows = try await database.client.query(
            "WITH gone AS (DELETE FROM challenges WHERE expires_at < now() RETURNING 1) SELECT count(*) FROM gone", logger: logger)
        for try await count in rows.decode(Int.self) { return count }
        return 0
    }
}

import Foundation
import PostgresNIO
import SesameAssertions
import SesameConfiguration
import SesameStorage

// Refresh's statements, prepared once per connection: parsing and planning them each time cost
// PostgreSQL more than running them.

/// `RefreshTokenFamilies.state(of:)`.
struct FamilyStateStatement: PostgresPreparedStatement {
    /// The family's state, for `$1`; `GuardedRotateStatement` reads the same.
    static let stateSQL = """
        SELECT f.app_id, f.generation, f.created_at, f.revoked_at IS NOT NULL AS revoked, f.expires_at <= now() AS expired,
               a.policy::text AS policy, \(StoredAccessRules.revocationsJSON(appID: "f.app_id")) AS revocations,
               coalesce(f.rotated_at > now() - interval '\(RefreshTokenFamilies.graceWindow.wholeSeconds) seconds', false) AS in_grace,
               f.grace_generation IS NOT DISTINCT FROM f.generation AS from_grace,
               k.key_id, k.app_id AS key_app_id, k.public_key, k.counter, k.environment, k.revoked_at IS NOT NULL AS key_revoked
        FROM refresh_token_families f
        JOIN attested_keys k ON k.key_id = f.key_id
        JOIN apps a ON a.app_id = f.app_id
        WHERE f.family_id = $1
        """
    /// The columns of `stateSQL`, in its order.
    static let stateColumns = "s.app_id, s.generation, s.created_at, s.revoked, s.expired, s.policy, s.revocations, s.in_grace, s.from_grace, "
        + "s.key_id, s.key_app_id, s.public_key, s.counter, s.environment, s.key_revoked"
    static let sql = stateSQL
    /// The family's columns, then its key's id and stored columns.
    typealias Row = (
        family: (String, Int64, Date, Bool, Bool, String, String),
        grace: (inWindow: Bool, current: Bool),
        key: (id: Data, stored: AttestedKey.StoredColumns)
    )

    let family: UUID

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 1)
        bindings.append(family)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        var cells = CellReader(row)
        return try Self.decodeState(&cells)
    }

    /// `stateSQL`'s columns, read from where `cells` stands.
    static func decodeState(_ cells: inout CellReader) throws -> Row {
        (
            family: (try cells.next(), try cells.next(), try cells.next(), try cells.next(), try cells.next(), try cells.next(), try cells.next()),
            grace: (inWindow: try cells.next(), current: try cells.next()),
            key: (id: try cells.next(), stored: (try cells.next(), try cells.next(), try cells.next(), try cells.next(), try cells.next()))
        )
    }
}

/// A row's cells read in order, each as the type its place asks for.
struct CellReader {
    struct MissingColumn: Error {}
    private var cells: PostgresRow.Iterator

    init(_ row: PostgresRow) { cells = row.makeIterator() }

    mutating func next<Value: PostgresDecodable>() throws -> Value {
        guard let cell = cells.next() else { throw MissingColumn() }
        return try cell.decode(Value.self)
    }
}

/// `RefreshTokenFamilies.rotateIfUnchanged(_:from:appID:keyID:assumed:lifetime:appVersion:)`. The
/// state is read first; the update then rechecks the family's own row as it is once its lock is
/// held (two requests with one token: the second finds the generation moved on and declines).
struct GuardedRotateStatement: PostgresPreparedStatement {
    static let sql = """
        WITH state AS (\(FamilyStateStatement.stateSQL)
        ), rotated AS (
            UPDATE refresh_token_families f
            SET generation = f.generation + 1, expires_at = now() + make_interval(secs => $3), rotated_at = now()
            FROM state s
            WHERE f.family_id = $1 AND f.generation = $2 AND f.revoked_at IS NULL AND f.expires_at > now()
                AND s.app_id = $5 AND s.key_id = $6 AND NOT s.key_revoked AND s.policy = $7 AND s.revocations = '[]'
            RETURNING f.generation
        ), seen AS (
            UPDATE attested_keys SET last_used_at = now(), app_version = coalesce($4, app_version)
            WHERE key_id = $6 AND EXISTS (SELECT 1 FROM rotated)
            RETURNING 1
        )
        SELECT (SELECT generation FROM rotated), \(FamilyStateStatement.stateColumns)
        FROM state s
        """
    /// The new generation if rotated, and the state as read.
    typealias Row = (Int64?, FamilyStateStatement.Row)

    let family: UUID
    let generation: Int64
    let lifetimeSeconds: Int64
    let appVersion: String?
    let appID: String
    let keyID: [UInt8]
    let policy: String

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 7)
        bindings.append(family)
        bindings.append(generation)
        bindings.append(Double(lifetimeSeconds))
        bindings.append(appVersion)
        bindings.append(appID)
        try bindings.append(Data(keyID))
        bindings.append(policy)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        var cells = CellReader(row)
        let rotated: Int64? = try cells.next()
        return (rotated, try FamilyStateStatement.decodeState(&cells))
    }
}

/// `RefreshTokenFamilies.rotate(_:from:lifetime:appVersion:redeeming:advancingCounterOf:to:grace:)`:
/// the challenge first, then the counter only if the challenge was fresh, then the family (moved,
/// noted as a grace rotation when `$9`, or revoked as reused) only if the counter rose.
struct AssertedRotateStatement: PostgresPreparedStatement {
    static let sql = """
        WITH redeemed AS (\(ChallengeStore.redeemingSQL(hash: "$7", purpose: "$8"))
        ), counted AS (
            UPDATE attested_keys SET counter = $6, last_used_at = now(), app_version = coalesce($4, app_version)
            WHERE key_id = $5 AND counter < $6 AND EXISTS (SELECT 1 FROM redeemed WHERE fresh)
            RETURNING 1
        ), rotated AS (
            UPDATE refresh_token_families
            SET generation = generation + 1, expires_at = now() + make_interval(secs => $3), rotated_at = now(),
                grace_generation = CASE WHEN $9 THEN generation + 1 ELSE grace_generation END
            WHERE family_id = $1 AND generation = $2 AND revoked_at IS NULL AND expires_at > now() AND EXISTS (SELECT 1 FROM counted)
            RETURNING generation
        ), reused AS (
            UPDATE refresh_token_families SET revoked_at = now(), revoked_reason = 'refresh token reused'
            WHERE family_id = $1 AND generation > $2 AND revoked_at IS NULL AND EXISTS (SELECT 1 FROM counted)
            RETURNING 1
        )
        SELECT EXISTS (SELECT 1 FROM redeemed WHERE fresh), EXISTS (SELECT 1 FROM counted), (SELECT generation FROM rotated),
               EXISTS (SELECT 1 FROM reused)
        """
    typealias Row = (Bool, Bool, Int64?, Bool)

    let family: UUID
    let generation: Int64
    let lifetimeSeconds: Int64
    let appVersion: String?
    let keyID: [UInt8]
    let counter: UInt32
    let challenge: ChallengeStore.Redemption
    let grace: Bool

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 9)
        bindings.append(family)
        bindings.append(generation)
        bindings.append(Double(lifetimeSeconds))
        bindings.append(appVersion)
        try bindings.append(Data(keyID))
        bindings.append(Int64(counter))
        try bindings.append(challenge.hash)
        bindings.append(challenge.purpose)
        bindings.append(grace)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}

/// `RefreshTokenFamilies.rotate(_:from:lifetime:appVersion:)`.
struct RotateStatement: PostgresPreparedStatement {
    static let sql = """
        WITH rotated AS (
            UPDATE refresh_token_families
            SET generation = generation + 1, expires_at = now() + make_interval(secs => $3), rotated_at = now()
            WHERE family_id = $1 AND generation = $2 AND revoked_at IS NULL AND expires_at > now()
            RETURNING generation, key_id
        ), reused AS (
            UPDATE refresh_token_families SET revoked_at = now(), revoked_reason = 'refresh token reused'
            WHERE family_id = $1 AND generation > $2 AND revoked_at IS NULL
            RETURNING 1
        ), seen AS (
            UPDATE attested_keys SET last_used_at = now(), app_version = coalesce($4, app_version)
            WHERE key_id = (SELECT key_id FROM rotated)
            RETURNING 1
        )
        SELECT (SELECT generation FROM rotated), EXISTS (SELECT 1 FROM reused), (SELECT count(*) FROM seen)
        """
    typealias Row = (Int64?, Bool, Int64)

    let family: UUID
    let generation: Int64
    let lifetimeSeconds: Int64
    let appVersion: String?

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 4)
        bindings.append(family)
        bindings.append(generation)
        bindings.append(Double(lifetimeSeconds))
        bindings.append(appVersion)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}

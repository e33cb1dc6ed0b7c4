import Foundation
import Logging
import PostgresNIO
import SesameConfiguration
import SesameDomain
import SesameStorage

/// A refresh-token family and what refreshing it depends on.
struct RefreshFamilyState: Sendable {
    let appID: String
    let generation: Int64
    let createdAt: Date
    let revoked: Bool
    let expired: Bool
    /// The family's attested key, as stored: an assertion is checked against it.
    let key: AttestedKey
    let policy: AppPolicy
    /// The app's emergency revocations, read in the same statement.
    let revocations: StoredAccessRules.Loaded

    var keyID: [UInt8] { key.keyID }
    var keyRevoked: Bool { key.revoked }
}

/// What happened when a refresh token was presented for rotation.
enum RotationOutcome: Sendable, Equatable {
    /// The token was current; the family moved to `generation`.
    case rotated(generation: Int64)
    /// An older generation came back: the family has been revoked.
    case reused
    /// The family is revoked, expired or unknown.
    case unusable
    /// The assertion's counter was no longer above the key's (another request advanced it):
    /// nothing was written.
    case counterNotAdvanced
}

/// What the one-statement refresh did.
enum GuardedRotation: Sendable {
    /// Every check held in the statement's snapshot; the family moved to `generation`.
    case rotated(generation: Int64)
    /// Something the statement checks did not hold (or the family is unknown: nil); nothing was
    /// written. The family's state, read in the same statement, for the checks made one by one.
    case declined(RefreshFamilyState?)
}

/// Refresh-token families: each refresh token is single use; the family remembers the current generation.
struct RefreshTokenFamilies: Sendable {
    let database: Database
    let policies: StoredPolicies
    /// Each app's policy as last read, which the one-statement refresh assumes and checks.
    let sightings = PolicySightings()
    let logger: Logger

    /// The family, its key, its app's policy and emergency revocations: one round trip, prepared.
    func state(of family: UUID) async throws -> RefreshFamilyState? {
        for try await row in try await database.client.execute(FamilyStateStatement(family: family), logger: logger) {
            return try state(from: row)
        }
        return nil
    }

    /// A refresh in one round trip, for the common case: the family rotates from `generation`
    /// (and the device's use is recorded) only if, in one snapshot, it is live at that generation,
    /// belongs to `appID` and `keyID`, its key is not revoked, the app has no emergency revocation,
    /// and the app's policy is still `assumed` (the caller has checked the request against it).
    /// When any of that fails nothing is written, and the state read in the same statement goes to
    /// the checks made one by one, as `state(of:)` would have.
    func rotateIfUnchanged(
        _ family: UUID, from generation: Int64, appID: String, keyID: [UInt8], assumed: PolicySightings.Sighting, lifetime: Duration,
        appVersion: String?
    ) async throws -> GuardedRotation {
        let statement = GuardedRotateStatement(
            family: family, generation: generation, lifetimeSeconds: lifetime.wholeSeconds, appVersion: appVersion, appID: appID, keyID: keyID,
            policy: assumed.text)
        for try await (rotated, state) in try await database.client.execute(statement, logger: logger) {
            if let rotated { return .rotated(generation: rotated) }
            return .declined(try self.state(from: state))
        }
        return .declined(nil)
    }

    private func state(from row: FamilyStateStatement.Row) throws -> RefreshFamilyState {
        let (appID, generation, createdAt, revoked, expired, policyText, revocationsJSON) = row.family
        let (keyID, keyAppID, publicKey, counter, environment, keyRevoked) = row.key
        var revocations = StoredAccessRules.Loaded()
        StoredAccessRules.revocations(json: revocationsJSON, appID: appID, into: &revocations)
        let policy = try policies.policy(policyText)
        sightings.saw(PolicySightings.Sighting(text: policyText, policy: policy), of: appID)
        let key = AttestedKey(
            keyID: Array(keyID), appID: keyAppID, publicKey: Array(publicKey), counter: UInt32(clamping: counter), environment: environment,
            revoked: keyRevoked)
        return RefreshFamilyState(
            appID: appID, generation: generation, createdAt: createdAt, revoked: revoked, expired: expired, key: key, policy: policy,
            revocations: revocations)
    }

    /// Moves the family from `generation` to the next one and records the device's use (when it
    /// was last seen, the version it now reports), in one statement; a stale generation revokes
    /// the family instead. Two requests racing with one token: the second finds the row moved on
    /// once the first's lock is released, and revokes.
    func rotate(_ family: UUID, from generation: Int64, lifetime: Duration, appVersion: String? = nil) async throws -> RotationOutcome {
        let rows = try await database.client.execute(
            RotateStatement(family: family, generation: generation, lifetimeSeconds: lifetime.wholeSeconds, appVersion: appVersion), logger: logger)
        for try await (next, reused, _) in rows {
            if let next { return .rotated(generation: next) }
            if reused { return .reused }
            // Neither matched in this statement's snapshot, which may predate a refresh that rotated
            // the family a moment ago (its row lock held this statement back until it committed):
            // the same token presented twice at once. Read afresh, a later generation is a reuse.
            return try await revokeIfRotatedPast(family, generation) ? .reused : .unusable
        }
        return .unusable
    }

    /// `rotate(_:from:lifetime:appVersion:)` for a refresh whose assertion carried `counter`, in
    /// the same statement: the key's counter advances to `counter` if that is still an increase,
    /// and only then is the family rotated (or, at a stale generation, revoked). Of two requests
    /// racing with one assertion, the second finds the counter moved on and writes nothing.
    func rotate(
        _ family: UUID, from generation: Int64, lifetime: Duration, appVersion: String?, advancingCounterOf keyID: [UInt8], to counter: UInt32
    ) async throws -> RotationOutcome {
        let statement = AssertedRotateStatement(
            family: family, generation: generation, lifetimeSeconds: lifetime.wholeSeconds, appVersion: appVersion, keyID: keyID, counter: counter)
        for try await (counted, next, reused) in try await database.client.execute(statement, logger: logger) {
            guard counted else { return .counterNotAdvanced }
            if let next { return .rotated(generation: next) }
            if reused { return .reused }
            // As in `rotate(_:from:lifetime:appVersion:)`: a refresh that committed a moment ago.
            return try await revokeIfRotatedPast(family, generation) ? .reused : .unusable
        }
        return .unusable
    }

    /// Revokes the family when it is live at a generation past `generation`; whether it did.
    private func revokeIfRotatedPast(_ family: UUID, _ generation: Int64) async throws -> Bool {
        let rows = try await database.client.query(
            """
            UPDATE refresh_token_families SET revoked_at = now(), revoked_reason = 'refresh token reused'
            WHERE family_id = \(family) AND generation > \(generation) AND revoked_at IS NULL
            RETURNING 1
            """, logger: logger)
        for try await _ in rows { return true }
        return false
    }

    /// Whether an emergency revocation covers the family in `state`, whose token says
    /// `tokenVersion`, for an app now claiming `claimedVersion`: the revocation half of the
    /// decision delivery makes (`AccessRules.verdict`), on the same stored rules. Kill switches
    /// are delivery's to enforce: a switched-off app may still refresh, and is told at delivery.
    static func isRevokedByEmergency(
        _ state: RefreshFamilyState, tokenVersion: AppVersion?, claimedVersion: AppVersion?, now: Date = Date()
    ) -> Bool {
        // A stored revocation that no longer parses: when in doubt, refuse.
        guard state.revocations.failures[state.appID] == nil else { return true }
        let revocations = state.revocations.rules[state.appID] ?? AccessRules()
        return revocations.verdict(requestedVersion: claimedVersion, tokenVersion: tokenVersion, issuedAt: state.createdAt, now: now) == .revoked
    }
}

// Refresh's statements, prepared once per connection: parsing and planning them each time cost
// PostgreSQL more than running them.

/// `RefreshTokenFamilies.state(of:)`.
private struct FamilyStateStatement: PostgresPreparedStatement {
    /// The family's state, for `$1`; `GuardedRotateStatement` reads the same.
    static let stateSQL = """
        SELECT f.app_id, f.generation, f.created_at, f.revoked_at IS NOT NULL AS revoked, f.expires_at <= now() AS expired,
               a.policy::text AS policy, \(StoredAccessRules.revocationsJSON(appID: "f.app_id")) AS revocations,
               k.key_id, k.app_id AS key_app_id, k.public_key, k.counter, k.environment, k.revoked_at IS NOT NULL AS key_revoked
        FROM refresh_token_families f
        JOIN attested_keys k ON k.key_id = f.key_id
        JOIN apps a ON a.app_id = f.app_id
        WHERE f.family_id = $1
        """
    /// The columns of `stateSQL`, in its order.
    static let stateColumns = "s.app_id, s.generation, s.created_at, s.revoked, s.expired, s.policy, s.revocations, "
        + "s.key_id, s.key_app_id, s.public_key, s.counter, s.environment, s.key_revoked"
    static let sql = stateSQL
    /// The family's columns, then its key's (as `AttestedKey` holds them).
    typealias Row = (
        family: (String, Int64, Date, Bool, Bool, String, String),
        key: (Data, String, Data, Int64, String, Bool)
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
            key: (try cells.next(), try cells.next(), try cells.next(), try cells.next(), try cells.next(), try cells.next())
        )
    }
}

/// A row's cells read in order, each as the type its place asks for.
private struct CellReader {
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
private struct GuardedRotateStatement: PostgresPreparedStatement {
    static let sql = """
        WITH state AS (\(FamilyStateStatement.stateSQL)
        ), rotated AS (
            UPDATE refresh_token_families f
            SET generation = f.generation + 1, expires_at = now() + make_interval(secs => $3)
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

/// `RefreshTokenFamilies.rotate(_:from:lifetime:appVersion:advancingCounterOf:to:)`: the counter
/// first; the family moves (or is revoked as reused) only when it did.
private struct AssertedRotateStatement: PostgresPreparedStatement {
    static let sql = """
        WITH counted AS (
            UPDATE attested_keys SET counter = $6, last_used_at = now(), app_version = coalesce($4, app_version)
            WHERE key_id = $5 AND counter < $6
            RETURNING 1
        ), rotated AS (
            UPDATE refresh_token_families
            SET generation = generation + 1, expires_at = now() + make_interval(secs => $3)
            WHERE family_id = $1 AND generation = $2 AND revoked_at IS NULL AND expires_at > now() AND EXISTS (SELECT 1 FROM counted)
            RETURNING generation
        ), reused AS (
            UPDATE refresh_token_families SET revoked_at = now(), revoked_reason = 'refresh token reused'
            WHERE family_id = $1 AND generation > $2 AND revoked_at IS NULL AND EXISTS (SELECT 1 FROM counted)
            RETURNING 1
        )
        SELECT EXISTS (SELECT 1 FROM counted), (SELECT generation FROM rotated), EXISTS (SELECT 1 FROM reused)
        """
    typealias Row = (Bool, Int64?, Bool)

    let family: UUID
    let generation: Int64
    let lifetimeSeconds: Int64
    let appVersion: String?
    let keyID: [UInt8]
    let counter: UInt32

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 6)
        bindings.append(family)
        bindings.append(generation)
        bindings.append(Double(lifetimeSeconds))
        bindings.append(appVersion)
        try bindings.append(Data(keyID))
        bindings.append(Int64(counter))
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}

/// `RefreshTokenFamilies.rotate(_:from:lifetime:appVersion:)`.
private struct RotateStatement: PostgresPreparedStatement {
    static let sql = """
        WITH rotated AS (
            UPDATE refresh_token_families
            SET generation = generation + 1, expires_at = now() + make_interval(secs => $3)
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

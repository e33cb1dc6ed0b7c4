import Foundation
import Logging
import PostgresNIO
import SesameAssertions
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
    /// The family rotated less than `RefreshTokenFamilies.graceWindow` ago.
    let inGraceWindow: Bool
    /// Its current generation was made by a grace rotation (which is not granted twice in a row).
    let currentFromGrace: Bool

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
    /// nothing but the challenge was written.
    case counterNotAdvanced
    /// The assertion's challenge was unknown, spent or expired: nothing but its removal was written.
    case challengeNotRedeemed
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
///
/// One exception, for a reply lost in flight (the app suspended, the network gone after auth
/// rotated): within `graceWindow` of a rotation, the token just before the current one, presented
/// again with a valid assertion by the family's own key, rotates the family once more (from its
/// current generation) instead of revoking it. The pair whose reply was lost is then superseded
/// and, since a grace rotation is never followed by another, refused as reused. Without an
/// assertion, with one that fails (another key), outside the window, two generations back or
/// right after a grace rotation, it is a reuse and the family is revoked, as before.
struct RefreshTokenFamilies: Sendable {
    /// How long after a rotation the previous token may be presented again (with an assertion).
    /// Long enough for an app suspended mid-refresh to come back; an assertion by the Secure
    /// Enclave key is what makes the exception safe, so only the device itself can use it.
    static let graceWindow: Duration = .seconds(600)

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
        let (inGraceWindow, currentFromGrace) = row.grace
        var revocations = StoredAccessRules.Loaded()
        StoredAccessRules.revocations(json: revocationsJSON, appID: appID, into: &revocations)
        let policy = try policies.policy(policyText)
        sightings.saw(PolicySightings.Sighting(text: policyText, policy: policy), of: appID)
        return RefreshFamilyState(
            appID: appID, generation: generation, createdAt: createdAt, revoked: revoked, expired: expired,
            key: AttestedKey(keyID: Array(row.key.id), stored: row.key.stored), policy: policy, revocations: revocations,
            inGraceWindow: inGraceWindow, currentFromGrace: currentFromGrace)
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

    /// `rotate(_:from:lifetime:appVersion:)` for a refresh whose assertion, over `challenge`, carried
    /// `counter` (a grace rotation when `grace`, noted as such), all in one statement: the challenge is redeemed; if it was fresh the key's counter
    /// advances to `counter` if that is still an increase; and only then is the family rotated (or,
    /// at a stale generation, revoked). Of two requests racing with one challenge or one counter,
    /// the second writes nothing.
    func rotate(
        _ family: UUID, from generation: Int64, lifetime: Duration, appVersion: String?, redeeming challenge: ChallengeStore.Redemption,
        advancingCounterOf keyID: [UInt8], to counter: UInt32, grace: Bool = false
    ) async throws -> RotationOutcome {
        let statement = AssertedRotateStatement(
            family: family, generation: generation, lifetimeSeconds: lifetime.wholeSeconds, appVersion: appVersion, keyID: keyID, counter: counter,
            challenge: challenge, grace: grace)
        for try await (redeemed, counted, next, reused) in try await database.client.execute(statement, logger: logger) {
            guard redeemed else { return .challengeNotRedeemed }
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

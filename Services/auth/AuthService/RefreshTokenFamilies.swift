import Foundation
import Logging
import PostgresNIO
import SesameConfiguration
import SesameDomain
import SesameStorage

/// A refresh-token family and what refreshing it depends on.
struct RefreshFamilyState: Sendable {
    let appID: String
    let keyID: [UInt8]
    let generation: Int64
    let createdAt: Date
    let revoked: Bool
    let expired: Bool
    let keyRevoked: Bool
    let policy: AppPolicy
}

/// What happened when a refresh token was presented for rotation.
enum RotationOutcome: Sendable, Equatable {
    /// The token was current; the family moved to `generation`.
    case rotated(generation: Int64)
    /// An older generation came back: the family has been revoked.
    case reused
    /// The family is revoked, expired or unknown.
    case unusable
}

/// Refresh-token families: each refresh token is single use; the family remembers the current generation.
struct RefreshTokenFamilies: Sendable {
    let database: Database
    let logger: Logger

    func state(of family: UUID) async throws -> RefreshFamilyState? {
        let rows = try await database.client.query(
            """
            SELECT f.app_id, f.key_id, f.generation, f.created_at, f.revoked_at IS NOT NULL, f.expires_at <= now(),
                   k.revoked_at IS NOT NULL, a.policy::text
            FROM refresh_token_families f
            JOIN attested_keys k ON k.key_id = f.key_id
            JOIN apps a ON a.app_id = f.app_id
            WHERE f.family_id = \(family)
            """, logger: logger)
        for try await (appID, keyID, generation, createdAt, revoked, expired, keyRevoked, policy) in rows.decode(
            (String, Data, Int64, Date, Bool, Bool, Bool, String).self)
        {
            return RefreshFamilyState(
                appID: appID, keyID: Array(keyID), generation: generation, createdAt: createdAt, revoked: revoked, expired: expired,
                keyRevoked: keyRevoked, policy: try AppPolicy(storedJSON: policy))
        }
        return nil
    }

    /// Moves the family from `generation` to the next one, atomically; a stale generation revokes it.
    func rotate(_ family: UUID, from generation: Int64, lifetime: Duration) async throws -> RotationOutcome {
        try await database.client.withTransaction(logger: logger) { connection in
            let rotated = try await connection.query(
                """
                UPDATE refresh_token_families
                SET generation = generation + 1, expires_at = now() + make_interval(secs => \(lifetime.wholeSeconds))
                WHERE family_id = \(family) AND generation = \(generation) AND revoked_at IS NULL AND expires_at > now()
                RETURNING generation
                """, logger: logger)
            for try await next in rotated.decode(Int64.self) { return .rotated(generation: next) }
            // Not current: if the family lives and has moved past this generation, the token was used before.
            let reused = try await connection.query(
                """
                UPDATE refresh_token_families SET revoked_at = now(), revoked_reason = 'refresh token reused'
                WHERE family_id = \(family) AND generation > \(generation) AND revoked_at IS NULL RETURNING 1
                """, logger: logger)
            for try await _ in reused { return .reused }
            return .unusable
        }
    }

    /// Whether an emergency revocation covers a family created at `familyCreatedAt` whose token
    /// says `tokenVersion`, for an app now claiming `claimedVersion`: the revocation half of the
    /// decision delivery makes (`AccessRules.verdict`), on the same stored rules. Kill switches
    /// are delivery's to enforce: a switched-off app may still refresh, and is told at delivery.
    func isRevokedByEmergency(
        appID: String, familyCreatedAt: Date, tokenVersion: AppVersion?, claimedVersion: AppVersion?, now: Date = Date()
    ) async throws -> Bool {
        let stored = try await StoredAccessRules.load(appID: appID, revocationsOnly: true, from: database.client, logger: logger)
        // A stored revocation that no longer parses: when in doubt, refuse.
        guard stored.failures[appID] == nil else { return true }
        let revocations = stored.rules[appID] ?? AccessRules()
        return revocations.verdict(requestedVersion: claimedVersion, tokenVersion: tokenVersion, issuedAt: familyCreatedAt, now: now) == .revoked
    }
}

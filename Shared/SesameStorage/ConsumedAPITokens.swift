import Foundation
import Logging
import PostgresNIO

/// The ids of consumed single-use API tokens, each kept until its token expires: a token is
/// consumed by the one statement that inserts its id, so of any number of concurrent consumes
/// exactly one wins. Expired ids are pruned (the token itself is refused by then), so the table
/// holds at most the tokens of the last few minutes.
public struct ConsumedAPITokens: Sendable {
    let database: Database
    let logger: Logger

    public init(database: Database, logger: Logger) {
        self.database = database
        self.logger = logger
    }

    /// What one consume did.
    public enum Outcome: Sendable, Equatable {
        case consumed
        case alreadyConsumed
        /// No live backend key has this hash.
        case unknownBackendKey
        /// The backend key is another app's than the token.
        case otherApp
        /// The backend key is bound to another audience than the token's.
        case otherAudience
        /// Neither the key nor the request names an audience, and the app's policy lists several.
        case audienceRequired
    }

    /// Consumes the token `tokenID` of `appID` for `audience`, which expires at `expiresAt`, for
    /// the backend key whose SHA-256 is `backendKeyHash`; `audienceNamed` says the backend named
    /// its audience (the caller checked it is the token's). The key's check, its audience, its use
    /// noted (once a minute) and the consume are one statement, one round trip on the hot path of
    /// the app's API; nothing is consumed unless every check passes.
    public func consume(tokenID: String, appID: String, audience: String, audienceNamed: Bool, expiresAt: Date, backendKeyHash: Data) async throws -> Outcome {
        let rows = try await database.client.query(
            """
            WITH key AS (
                SELECT key_id, app_id, audience,
                    (SELECT jsonb_array_length(CASE jsonb_typeof(policy->'apiAudiences') WHEN 'array' THEN policy->'apiAudiences' ELSE '[]' END)
                        FROM apps WHERE apps.app_id = backend_keys.app_id) AS audiences
                FROM backend_keys WHERE key_hash = \(backendKeyHash) AND revoked_at IS NULL
            ), accepted AS (
                SELECT * FROM key WHERE app_id = \(appID) AND coalesce(audience = \(audience), true)
                    AND (\(audienceNamed) OR audience IS NOT NULL OR audiences <= 1)
            ), touched AS (
                UPDATE backend_keys SET last_used_at = now()
                WHERE key_id = (SELECT key_id FROM key) AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')
            ), inserted AS (
                INSERT INTO consumed_api_tokens (token_id, app_id, expires_at)
                SELECT \(tokenID), \(appID), \(expiresAt) FROM accepted
                ON CONFLICT (token_id) DO NOTHING RETURNING 1
            )
            SELECT (SELECT app_id FROM key), (SELECT coalesce(audience = \(audience), true) FROM key),
                EXISTS (SELECT 1 FROM accepted), EXISTS (SELECT 1 FROM inserted)
            """, logger: logger)
        for try await (keyAppID, audienceMatches, accepted, inserted) in rows.decode((String?, Bool?, Bool, Bool).self) {
            guard let keyAppID else { return .unknownBackendKey }
            guard keyAppID == appID else { return .otherApp }
            guard audienceMatches == true else { return .otherAudience }
            guard accepted else { return .audienceRequired }
            return inserted ? .consumed : .alreadyConsumed
        }
        return .unknownBackendKey
    }

    /// Consumes the token `tokenID` of `appID` as an attested relay's proof (no backend key: the
    /// relay checked the token itself); false when it was consumed before, here or by a backend.
    public func consumeForRelay(tokenID: String, appID: String, expiresAt: Date) async throws -> Bool {
        let rows = try await database.client.query(
            """
            INSERT INTO consumed_api_tokens (token_id, app_id, expires_at) VALUES (\(tokenID), \(appID), \(expiresAt))
            ON CONFLICT (token_id) DO NOTHING RETURNING 1
            """, logger: logger)
        for try await _ in rows { return true }
        return false
    }

    /// Deletes the ids of tokens that expired more than a minute ago (a margin for clocks);
    /// returns how many.
    public func pruneExpired() async throws -> Int {
        let rows = try await database.client.query(
            "WITH gone AS (DELETE FROM consumed_api_tokens WHERE expires_at < now() - interval '1 minute' RETURNING 1) SELECT count(*) FROM gone",
            logger: logger)
        for try await count in rows.decode(Int.self) { return count }
        return 0
    }
}

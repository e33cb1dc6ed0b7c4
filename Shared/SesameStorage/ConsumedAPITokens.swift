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

    /// Consumes the token `tokenID` of `appID`, which expires at `expiresAt`; false when it was
    /// consumed before.
    public func consume(tokenID: String, appID: String, expiresAt: Date) async throws -> Bool {
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

import Logging
import PostgresNIO

/// The connection a step ran on closed before the step ended.
public struct ConnectionClosedError: Error, CustomStringConvertible {
    public var description: String { "the database connection closed during the step" }
}

/// The leased connection was closed before anything was sent on it.
private struct ClosedWhenLeased: Error {}

extension PostgresConnectionSource {
    /// Runs `body` in a transaction that fails as soon as its connection closes, and within `limit`
    /// in any case: for loops that must go on after a restart or failover of PostgreSQL (the outbox
    /// relay), where `withTransaction` can wait forever (`AbandonableOperation` says why;
    /// `docs/upstream/postgresnio-write-without-promise.md` is the defect and when this can go).
    ///
    /// A transaction given up on closes its connection rather than handing it back to the pool with
    /// the abandoned work still on it; the pool opens another. One that failed by itself is rolled
    /// back, as `withTransaction` does.
    public func withWatchedTransaction<Result: Sendable>(
        logger: Logger, limit: Duration,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        // The pool can hand back a connection that closed a moment ago, before it heard of the
        // close; nothing has been sent on it, so another is leased after a pause that gives the
        // pool time to hear (a few times at most: about 150 ms in all).
        for lease in 1..<Self.leasesTried {
            do {
                return try await watchedTransaction(logger: logger, limit: limit, refusingClosed: true, body)
            } catch is ClosedWhenLeased {
                try await Task.sleep(for: .milliseconds(10 * lease))
            }
        }
        return try await watchedTransaction(logger: logger, limit: limit, refusingClosed: false, body)
    }

    /// How many leases a watched transaction tries before it fails on a closed connection.
    private static var leasesTried: Int { 6 }

    private func watchedTransaction<Result: Sendable>(
        logger: Logger, limit: Duration, refusingClosed: Bool,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await withConnection(isolation: #isolation) { connection in
            if refusingClosed, connection.isClosed { throw ClosedWhenLeased() }
            let closed: @Sendable () -> (any Error)? = { connection.isClosed ? ConnectionClosedError() : nil }
            do {
                return try await AbandonableOperation.run({
                    try await connection.query("BEGIN", logger: logger)
                    try await DatabaseTracing.markTransaction(connection, logger: logger)
                    let result = try await body(connection)
                    try await connection.query("COMMIT", logger: logger)
                    return result
                }, limit: limit, giveUp: closed)
            } catch let error where error is TimeoutError || error is ConnectionClosedError || error is CancellationError {
                // Given up on: the abandoned work may still be on the connection.
                _ = connection.close() as EventLoopFuture<Void>  // closing, not waiting for it
                throw error
            } catch {
                do {
                    _ = try await AbandonableOperation.run({ try await connection.query("ROLLBACK", logger: logger) }, limit: limit, giveUp: closed)
                } catch {
                    _ = connection.close() as EventLoopFuture<Void>  // closing, not waiting for it
                }
                throw error
            }
        }
    }
}

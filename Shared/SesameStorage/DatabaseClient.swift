import Logging
import PostgresNIO

/// What lends PostgreSQL connections and runs statements: PostgresNIO's `PostgresClient` (tests,
/// tools) or a service's `DatabaseClient`. Code that only needs to run statements takes one.
public protocol PostgresConnectionSource: Sendable {
    /// Lends a connection for `closure`'s lifetime; the closure must not keep it.
    func withConnection<Result>(
        isolation: isolated (any Actor)?, _ closure: nonisolated(nonsending) (PostgresConnection) async throws -> sending Result
    ) async throws -> sending Result

    /// Runs `query` on a lent connection, given back once its rows have been read.
    @discardableResult
    func query(_ query: PostgresQuery, logger: Logger?, file: String, line: Int) async throws -> PostgresRowSequence
}

extension PostgresClient: PostgresConnectionSource {}

extension PostgresConnectionSource {
    /// Runs `closure` in a transaction on a lent connection: committed when it returns, rolled back
    /// when it throws (PostgresNIO's `withTransaction`).
    public func withTransaction<Result>(
        logger: Logger, file: String = #file, line: Int = #line, isolation: isolated (any Actor)? = #isolation,
        _ closure: (PostgresConnection) async throws -> sending Result
    ) async throws -> sending Result {
        try await DatabaseTracing.traced("transaction") {
            try await withConnection(isolation: isolation) { connection in
                try await connection.withTransaction(logger: logger, file: file, line: line, isolation: isolation) { connection in
                    try await DatabaseTracing.markTransaction(connection, logger: logger)
                    return try await closure(connection)
                }
            }
        }
    }

    /// `withTransaction`, rethrowing the closure's own error once the transaction is rolled back
    /// instead of PostgresNIO's wrapper: a refusal thrown inside (a conflict, a missing row)
    /// reaches the caller, and the client, as itself rather than as an internal error.
    public func withRefusingTransaction<Result>(
        logger: Logger, isolation: isolated (any Actor)? = #isolation, _ closure: (PostgresConnection) async throws -> sending Result
    ) async throws -> sending Result {
        do {
            return try await withTransaction(logger: logger, isolation: isolation, closure)
        } catch let error as PostgresTransactionError {
            if error.rollbackError == nil, error.beginError == nil, let closureError = error.closureError { throw closureError }
            throw error
        }
    }
}

/// A service's way to the database: each statement or lease goes to one of the pool's
/// connections (`SingleConnectionPools` says how it is chosen). Get it from `Database.client`
/// for each use: a followed database may have moved.
public struct DatabaseClient: PostgresConnectionSource {
    let pools: SingleConnectionPools

    public func withConnection<Result>(
        isolation: isolated (any Actor)? = #isolation,
        _ closure: nonisolated(nonsending) (PostgresConnection) async throws -> sending Result
    ) async throws -> sending Result {
        let member = try pools.lend()
        defer { pools.giveBack(member) }
        return try await member.client.withConnection(isolation: isolation, closure)
    }

    @discardableResult
    public func query(_ query: PostgresQuery, logger: Logger? = nil, file: String = #fileID, line: Int = #line) async throws
        -> PostgresRowSequence
    {
        try await DatabaseTracing.traced(DatabaseTracing.operation(of: query)) {
            let member = try pools.lend()
            defer { pools.giveBack(member) }
            return try await member.client.query(query, logger: logger, file: file, line: line)
        }
    }

    /// Runs a prepared statement, preparing it on the connection the first time it runs there.
    public func execute<Statement: PostgresPreparedStatement, Row>(
        _ statement: Statement, logger: Logger? = nil, file: String = #fileID, line: Int = #line
    ) async throws -> AsyncThrowingMapSequence<PostgresRowSequence, Row> where Row == Statement.Row {
        try await DatabaseTracing.traced(String(describing: Statement.self)) {
            let member = try pools.lend()
            defer { pools.giveBack(member) }
            return try await member.client.execute(statement, logger: logger, file: file, line: line)
        }
    }
}

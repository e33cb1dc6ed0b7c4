import PostgresNIO
import SesameTracing
import Tracing

/// Spans for PostgreSQL work done for a traced request or event, and the trace handed to the
/// outbox: a traced transaction sets `sesame.trace_parent` for itself, which the outbox trigger
/// copies (migration 34), so the relay's publish span continues the request's trace.
///
/// Nothing happens when tracing is off, nor for work no span asked for (the pool's sweep, the
/// relay's polling, resyncs): those would be roots of traces of their own and only noise. A span
/// carries the statement's kind (`SELECT`, `INSERT`, …), never its text or its values.
enum DatabaseTracing {
    /// Runs `body` in a client span named for `operation`, when a traced caller is waiting on it.
    static func traced<Result>(
        _ operation: @autoclosure () -> String, isolation: isolated (any Actor)? = #isolation,
        _ body: () async throws -> sending Result
    ) async throws -> sending Result {
        guard SesameTracing.isEnabled, ServiceContext.current != nil else { return try await body() }
        let operation = operation()
        let span = startSpan("postgres \(operation)", ofKind: .client)
        span.attributes["db.system.name"] = "postgresql"
        span.attributes["db.operation.name"] = operation
        defer { span.end() }
        // A leaf: what runs inside starts no span of its own, so the caller's stays current (and
        // a transaction's outbox rows name the caller's span, which the publish span continues).
        do {
            return try await body()
        } catch {
            SesameTracing.recordFailure(error, on: span)
            throw error
        }
    }

    /// The statement's first word (`SELECT`, `WITH`, `INSERT`, …), at most 16 letters.
    static func operation(of query: PostgresQuery) -> String {
        let word = query.sql.drop { !$0.isLetter }.prefix { $0.isLetter }.prefix(16)
        return word.isEmpty ? "statement" : word.uppercased()
    }

    /// Inside a traced transaction, hands its trace to what the transaction writes to the outbox.
    static func markTransaction(_ connection: PostgresConnection, logger: Logger) async throws {
        guard let traceParent = SesameTracing.currentHeaders()["traceparent"] else { return }
        try await connection.query("SELECT set_config('sesame.trace_parent', \(traceParent), true)", logger: logger)
    }
}

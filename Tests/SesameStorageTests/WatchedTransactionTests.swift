import Foundation
import Logging
import PostgresNIO
import SesameTestSupport
import Testing

@testable import SesameStorage

/// A transaction on a connection PostgreSQL ends (a restart, a failover): the loops that use it
/// (the outbox relay) must hear of it at once, not wait for an answer that never comes.
@Suite("A watched transaction", .timeLimit(.minutes(2)))
struct WatchedTransactionTests {
    let logger = Logger(label: "watched-transaction-test")

    /// Runs `body` with a running client of a fresh database.
    func withFreshClient(_ body: (PostgresClient) async throws -> Void) async throws {
        try await TestDatabase.withFreshDatabase { url in try await TestDatabase.withClient(url, body) }
    }

    static func single<Value: PostgresDecodable & Sendable>(_ rows: PostgresRowSequence, as _: Value.Type) async throws -> Value {
        for try await value in rows.decode(Value.self) { return value }
        throw TestDatabase.Unavailable(description: "no row")
    }

    @Test("its connection ended by the server mid-transaction: it fails within seconds, and the next one works")
    func failsWhenTheServerEndsItsConnection() async throws {
        try await withFreshClient { client in
            let logger = logger
            let started = ContinuousClock.now
            await #expect(throws: (any Error).self) {
                try await client.withWatchedTransaction(logger: logger, limit: .seconds(60)) { connection in
                    let pid = try await Self.single(try await connection.query("SELECT pg_backend_pid()", logger: logger), as: Int32.self)
                    // From another pooled connection, as PostgreSQL's shutdown does to every session.
                    _ = try await client.query("SELECT pg_terminate_backend(\(pid))", logger: logger)
                    let deadline = ContinuousClock.now + .seconds(10)
                    while !connection.isClosed, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
                    // Written after the close: PostgresNIO 1.33 never answers it.
                    _ = try await connection.query("SELECT 1", logger: logger)
                }
            }
            #expect(ContinuousClock.now - started < .seconds(15))

            let next = try await client.withWatchedTransaction(logger: logger, limit: .seconds(10)) { connection in
                try await Self.single(try await connection.query("SELECT 7", logger: logger), as: Int.self)
            }
            #expect(next == 7)
        }
    }

    @Test("a body that throws is rolled back: nothing it wrote stays, and the connection serves the next transaction")
    func rollsBackABodyThatThrows() async throws {
        struct Refused: Error {}
        try await withFreshClient { client in
            let logger = logger
            _ = try await client.query("CREATE TABLE watched (n int)", logger: logger)
            await #expect(throws: Refused.self) {
                try await client.withWatchedTransaction(logger: logger, limit: .seconds(10)) { connection in
                    _ = try await connection.query("INSERT INTO watched VALUES (1)", logger: logger)
                    throw Refused()
                }
            }
            try await client.withWatchedTransaction(logger: logger, limit: .seconds(10)) { connection in
                _ = try await connection.query("INSERT INTO watched VALUES (2)", logger: logger)
            }
            let rows = try await Self.single(try await client.query("SELECT array_agg(n)::int[] FROM watched", logger: logger), as: [Int].self)
            #expect(rows == [2])
        }
    }

    @Test("a body past its limit is given up on at the limit")
    func givesUpAtTheLimit() async throws {
        try await withFreshClient { client in
            let logger = logger
            let started = ContinuousClock.now
            await #expect(throws: TimeoutError.self) {
                try await client.withWatchedTransaction(logger: logger, limit: .milliseconds(300)) { connection in
                    _ = try await connection.query("SELECT pg_sleep(20)", logger: logger)
                }
            }
            #expect(ContinuousClock.now - started < .seconds(5))
        }
    }
}

import Foundation
import Logging
import PostgresNIO
import SesameTestSupport
import Testing

@testable import SesameStorage

/// The pool keeps one connection open and opens more up to its size as queries need them; a
/// sweep stands in for PostgresNIO's per-connection keep-alive timers (docs/scaling.md says what
/// those cost, and why the pool is not fixed at its size).
@Suite("The database pool is swept", .timeLimit(.minutes(1)))
struct DatabaseSweptPoolTests {
    let logger = Logger(label: "database-swept-pool-test")

    /// Runs `body` while `database` runs, once `opened` connections (if given) are open on it.
    func whileRunning(_ database: Database, opened: Int? = nil, _ body: () async throws -> Void) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await database.run() }
            defer { group.cancelAll() }
            if let opened {
                try await eventually("the pool's \(opened) connections open") { try await TestDatabase.backends(of: database.url.database) == opened }
            }
            try await body()
        }
    }

    @Test("the pool opens one connection at start, before any query, and no more than its size under load")
    func opensOneAtStart() async throws {
        try await TestDatabase.withFreshDatabase { url in
            let database = Database(url: url, poolSize: 3, sweepInterval: .seconds(3600), logger: logger)
            try await whileRunning(database, opened: 1) {
                try await withThrowingDiscardingTaskGroup { queries in
                    for _ in 0..<12 { queries.addTask { try await database.client.query("SELECT pg_sleep(0.05)") } }
                }
                #expect(try await TestDatabase.backends(of: url.database) == 3)
            }
        }
    }

    @Test("each sweep runs a statement on every connection of the pool")
    func sweepTouchesEveryConnection() async throws {
        try await TestDatabase.withFreshDatabase { url in
            let database = Database(url: url, poolSize: 4, sweepInterval: .milliseconds(200), logger: logger)
            try await whileRunning(database) {
                try await eventually("every connection ran the sweep's statement") {
                    let backends = try await TestDatabase.backendStatements(of: url.database)
                    return backends.count == 4 && backends.allSatisfy { $0.query == Database.Pool.sweepStatement.sql }
                }
            }
        }
    }

    @Test("without a sweep due, an idle connection runs nothing")
    func noSweepBeforeItsInterval() async throws {
        try await TestDatabase.withFreshDatabase { url in
            let database = Database(url: url, poolSize: 2, sweepInterval: .seconds(3600), logger: logger)
            try await whileRunning(database, opened: 1) {
                try await Task.sleep(for: .milliseconds(500))
                let backends = try await TestDatabase.backendStatements(of: url.database)
                #expect(backends.count == 1)
                #expect(backends.allSatisfy { $0.query != Database.Pool.sweepStatement.sql }, "\(backends)")
            }
        }
    }

    @Test("the connection kept open is replaced when it closes, without waiting for a query or a sweep, and the pool answers on")
    func replacesAClosedConnection() async throws {
        try await TestDatabase.withFreshDatabase { url in
            // No sweep in the test's time: the pool itself, not a sweep's demand, must replace it.
            let database = Database(url: url, poolSize: 2, sweepInterval: .seconds(3600), logger: logger)
            try await whileRunning(database, opened: 1) {
                let ended = try #require(try await TestDatabase.backendStatements(of: url.database).first?.pid)
                try await TestDatabase.terminate(backend: ended)
                try await eventually("a new connection in its place") {
                    let now = try await TestDatabase.backendStatements(of: url.database).map(\.pid)
                    return now.count == 1 && !now.contains(ended)
                }
                // Every connection answers: two statements at once, each on its own connection.
                try await withThrowingDiscardingTaskGroup { queries in
                    for _ in 0..<2 { queries.addTask { try await database.client.query("SELECT pg_sleep(0.05)") } }
                }
            }
        }
    }

    @Test("a pool whose new connections were refused (a cluster at max_connections) serves a burst of queries once it can open more")
    func survivesRefusedConnections() async throws {
        try await TestDatabase.withFreshDatabase { url in
            // A role PostgreSQL admits twice at once: the sweep's round asks for four, and two are
            // refused, as they are when a cluster is at max_connections.
            let role = "limited_\(UUID().uuidString.prefix(8).lowercased())"
            try await TestDatabase.withClient(url) { client in
                _ = try await client.query(PostgresQuery(unsafeSQL: "CREATE ROLE \(role) LOGIN PASSWORD 'limited' CONNECTION LIMIT 2"))
            }
            let limited = try DatabaseURL("postgres://\(role):limited@\(url.host):\(url.port)/\(url.database)?sslmode=disable")
            let database = Database(url: limited, poolSize: 4, sweepInterval: .milliseconds(100), logger: logger)
            try await whileRunning(database) {
                try await eventually("two connections open, the others refused") { try await TestDatabase.backends(of: url.database) == 2 }
                try await Task.sleep(for: .milliseconds(500))
                try await TestDatabase.withClient(url) { client in
                    _ = try await client.query(PostgresQuery(unsafeSQL: "ALTER ROLE \(role) CONNECTION LIMIT -1"))
                }
                // More at once than the connections it has: the pool must open more.
                try await withThrowingDiscardingTaskGroup { queries in
                    for _ in 0..<8 { queries.addTask { try await database.client.query("SELECT pg_sleep(0.05)") } }
                }
                try await eventually("the pool back at its size") { try await TestDatabase.backends(of: url.database) == 4 }
            }
            // A role is the cluster's, not the test database's: it goes with the test.
            try await TestDatabase.withClient(url) { client in
                _ = try await client.query(PostgresQuery(unsafeSQL: "DROP ROLE \(role)"))
            }
        }
    }
}

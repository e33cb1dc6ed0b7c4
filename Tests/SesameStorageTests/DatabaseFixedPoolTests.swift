import Foundation
import Logging
import PostgresNIO
import SesameTestSupport
import Testing

@testable import SesameStorage

/// The pool is fixed: its connections are opened at start and kept, and a sweep stands in for
/// PostgresNIO's per-connection keep-alive timers (docs/scaling.md says what those cost).
@Suite("The database pool is fixed and swept", .timeLimit(.minutes(1)))
struct DatabaseFixedPoolTests {
    let logger = Logger(label: "database-fixed-pool-test")

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

    @Test("the pool opens its size at start, before any query, and no more under load")
    func opensItsSizeAtStart() async throws {
        try await TestDatabase.withFreshDatabase { url in
            let database = Database(url: url, poolSize: 3, logger: logger)
            try await whileRunning(database, opened: 3) {
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
            try await whileRunning(database, opened: 2) {
                try await Task.sleep(for: .milliseconds(500))
                let backends = try await TestDatabase.backendStatements(of: url.database)
                #expect(backends.count == 2)
                #expect(backends.allSatisfy { $0.query != Database.Pool.sweepStatement.sql }, "\(backends)")
            }
        }
    }

    @Test("a connection that closes is replaced without waiting for a query or a sweep, and the pool answers on")
    func replacesAClosedConnection() async throws {
        try await TestDatabase.withFreshDatabase { url in
            // No sweep in the test's time: the pool itself, not a sweep's demand, must replace it.
            let database = Database(url: url, poolSize: 2, sweepInterval: .seconds(3600), logger: logger)
            try await whileRunning(database, opened: 2) {
                let before = Set(try await TestDatabase.backendStatements(of: url.database).map(\.pid))
                let ended = try #require(before.first)
                try await TestDatabase.terminate(backend: ended)
                try await eventually("a new connection in its place") {
                    let now = Set(try await TestDatabase.backendStatements(of: url.database).map(\.pid))
                    return now.count == 2 && !now.contains(ended)
                }
                // Every connection answers: two statements at once, each on its own connection.
                try await withThrowingDiscardingTaskGroup { queries in
                    for _ in 0..<2 { queries.addTask { try await database.client.query("SELECT pg_sleep(0.05)") } }
                }
            }
        }
    }
}

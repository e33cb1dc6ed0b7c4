import Foundation
import Logging
import PostgresNIO
import SesameHTTP
import SesameTestSupport
import Synchronization
import Testing

@testable import SesameStorage

/// The pool, made of PostgresNIO pools of one connection each, opens one connection at start and
/// more up to its size as queries need them, keeps those it opened, and sweeps them in place of
/// PostgresNIO's per-connection keep-alive timers (docs/scaling.md says what those cost, and why
/// the pool is not one PostgresNIO pool fixed at its size).
@Suite("The database pool", .timeLimit(.minutes(1)))
struct SingleConnectionPoolsTests {
    let logger = Logger(label: "single-connection-pools-test")

    /// Runs `body` while `database` runs, once the connection it opens at start is open.
    func whileRunning(_ database: Database, _ body: () async throws -> Void) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await database.run() }
            defer { group.cancelAll() }
            try await eventually("the pool's first connection open") { try await TestDatabase.backends(of: database.url.database) == 1 }
            try await body()
        }
    }

    /// Runs `body` with a running pool of `size` on a fresh database.
    func withRunningPool(size: Int, sweepInterval: Duration, _ body: (DatabaseURL, Database) async throws -> Void) async throws {
        try await TestDatabase.withFreshDatabase { url in
            let database = Database(url: url, poolSize: size, sweepInterval: sweepInterval, logger: logger)
            try await whileRunning(database) { try await body(url, database) }
        }
    }

    /// `count` short statements at once; more than the connections open, and the pool opens more.
    func burst(_ count: Int, on database: Database) async throws {
        try await withThrowingDiscardingTaskGroup { queries in
            for _ in 0..<count { queries.addTask { try await database.client.query("SELECT pg_sleep(0.05)") } }
        }
    }

    @Test("a query goes to the first idle connected pool; with none, to the least busy connected one, and another opens")
    func lendsIdleThenLeastBusy() throws {
        // Never run: the choice alone, with the connections' states set by hand.
        let configuration = try DatabaseURL("postgres://nobody@127.0.0.1:1/none").clientConfiguration
        let pools = SingleConnectionPools(configuration: configuration, size: 3, sweepInterval: .seconds(3600), logger: logger)
        let (first, second, third) = (pools.members[0], pools.members[1], pools.members[2])

        // Nothing connected yet (PostgreSQL starting): the first waits for its connection; a second opens.
        let waiting = try pools.lend()
        #expect(waiting === first)
        #expect(pools.openCount == 2)
        pools.giveBack(waiting)

        first.isConnected.store(true, ordering: .relaxed)
        let idle = try pools.lend()
        #expect(idle === first)
        #expect(pools.openCount == 2, "an idle connected pool was found: nothing more opens")

        // The first busy, the second open but not connected: never lent while another is connected.
        let busy = try pools.lend()
        #expect(busy === first)
        #expect(pools.openCount == 3)
        second.isConnected.store(true, ordering: .relaxed)
        third.isConnected.store(true, ordering: .relaxed)
        let next = try pools.lend()
        #expect(next === second)
        let last = try pools.lend()
        #expect(last === third)
        // All busy, all open: the least busy (the second and third lent once, the first twice).
        #expect(try pools.lend() === second)
        #expect(pools.openCount == 3)
        for member in [idle, busy, next, last, second] { pools.giveBack(member) }
        #expect(pools.members.allSatisfy { $0.inFlight.load(ordering: .relaxed) == 0 })
        #expect(try pools.lend() === first)
    }

    @Test("past size × 32 queries in flight, a query is refused at once (busy) instead of queueing; one finished makes room")
    func boundedWait() throws {
        let configuration = try DatabaseURL("postgres://nobody@127.0.0.1:1/none").clientConfiguration
        let pools = SingleConnectionPools(configuration: configuration, size: 2, sweepInterval: .seconds(3600), logger: logger)
        let bound = 2 * SingleConnectionPools.queuedPerConnection
        let before = poolCounts()
        var lent: [SingleConnectionPools.Member] = []
        for _ in 0..<bound { lent.append(try pools.lend()) }
        #expect(throws: StorageError.busy) { try pools.lend() }
        // None connected: every lend queued, and the one past the bound was refused (the
        // counters the dashboard's pool panel and the pool alert read).
        let after = poolCounts()
        #expect(after.waits - before.waits >= Double(bound))
        #expect(after.refusals - before.refusals >= 1)
        #expect(pools.members.reduce(0) { $0 + $1.inFlight.load(ordering: .relaxed) } == bound, "a refusal took a place")
        pools.giveBack(lent.removeLast())
        lent.append(try pools.lend())
        for member in lent { pools.giveBack(member) }
    }

    @Test("a slow database: queries past the bound are refused while the others wait their turn, and all of those complete")
    func boundedWaitLive() async throws {
        try await withRunningPool(size: 1, sweepInterval: .seconds(3600)) { _, database in
            let bound = SingleConnectionPools.queuedPerConnection
            let released = ReleaseFlag()
            try await withThrowingTaskGroup(of: Void.self) { group in
                // The first lease holds the one connection until released; the rest queue behind it.
                for _ in 0..<bound {
                    group.addTask {
                        try await database.client.withConnection { _ in
                            while !released.isSet.load(ordering: .relaxed) { try await Task.sleep(for: .milliseconds(10)) }
                        }
                    }
                }
                try await eventually("every lease lent a place") {
                    database.client.pools.members.reduce(0) { $0 + $1.inFlight.load(ordering: .relaxed) } == bound
                }
                await #expect(throws: StorageError.busy) { try await database.client.query("SELECT 1") }
                released.isSet.store(true, ordering: .relaxed)
                try await group.waitForAll()
            }
            #expect(try await database.client.query("SELECT 1").collect().count == 1)
        }
    }

    @Test("the pool opens one connection at start, before any query, and no more than its size under load")
    func opensOneAtStart() async throws {
        try await withRunningPool(size: 3, sweepInterval: .seconds(3600)) { url, database in
            try await burst(12, on: database)
            #expect(try await TestDatabase.backends(of: url.database) == 3)
        }
    }

    @Test("each sweep runs a statement on every connection the pool opened")
    func sweepTouchesEveryConnection() async throws {
        try await withRunningPool(size: 4, sweepInterval: .milliseconds(200)) { url, database in
            try await burst(8, on: database)
            try await eventually("every connection ran the sweep's statement") {
                let backends = try await TestDatabase.backendStatements(of: url.database)
                return backends.count == 4 && backends.allSatisfy { $0.query == SingleConnectionPools.sweepStatement.sql }
            }
        }
    }

    @Test("without a sweep due, an idle connection runs nothing")
    func noSweepBeforeItsInterval() async throws {
        try await withRunningPool(size: 2, sweepInterval: .seconds(3600)) { url, database in
            try await Task.sleep(for: .milliseconds(500))
            let backends = try await TestDatabase.backendStatements(of: url.database)
            #expect(backends.count == 1)
            #expect(backends.allSatisfy { $0.query != SingleConnectionPools.sweepStatement.sql }, "\(backends)")
        }
    }

    @Test("the connection kept open is replaced when it closes, without waiting for a query or a sweep, and the pool answers on")
    func replacesAClosedConnection() async throws {
        // No sweep in the test's time: the pool itself, not a sweep's demand, must replace it.
        try await withRunningPool(size: 2, sweepInterval: .seconds(3600)) { url, database in
            let ended = try #require(try await TestDatabase.backendStatements(of: url.database).first?.pid)
            try await TestDatabase.terminate(backend: ended)
            try await eventually("a new connection in its place") {
                let now = try await TestDatabase.backendStatements(of: url.database).map(\.pid)
                return now.count == 1 && !now.contains(ended)
            }
            // Every connection answers: two statements at once, each on its own connection.
            try await burst(2, on: database)
        }
    }

    @Test("while new connections are refused (a cluster at max_connections), queries go to the open ones; once they are admitted, the pool opens the rest")
    func survivesRefusedConnections() async throws {
        try await TestDatabase.withFreshDatabase { url in
            // A role PostgreSQL admits twice at once, as a cluster at max_connections refuses the rest.
            let role = "limited_\(UUID().uuidString.prefix(8).lowercased())"
            try await TestDatabase.withClient(url) { client in
                _ = try await client.query(PostgresQuery(unsafeSQL: "CREATE ROLE \(role) LOGIN PASSWORD 'limited' CONNECTION LIMIT 2"))
            }
            let limited = try DatabaseURL("postgres://\(role):limited@\(url.host):\(url.port)/\(url.database)?sslmode=disable")
            let database = Database(url: limited, poolSize: 4, sweepInterval: .milliseconds(100), logger: logger)
            try await whileRunning(database) {
                // Once the first connection is open: before it, a start-up burst may wait on any
                // connection being opened, refused ones too (they hold it until PostgreSQL admits them).
                try await eventually("the first connection open") { database.client.pools.members[0].wasConnected.load(ordering: .relaxed) }
                try await burst(8, on: database)
                try await eventually("two connections open, the others refused") { try await TestDatabase.backends(of: url.database) == 2 }
                // A query lent a refused connection would wait for PostgresNIO's circuit breaker (a minute by default).
                let started = ContinuousClock.now
                for _ in 0..<3 { try await burst(8, on: database) }
                #expect(ContinuousClock.now - started < .seconds(5))
                #expect(try await TestDatabase.backends(of: url.database) == 2)
                try await TestDatabase.withClient(url) { client in
                    _ = try await client.query(PostgresQuery(unsafeSQL: "ALTER ROLE \(role) CONNECTION LIMIT -1"))
                }
                try await eventually("the refused connections opened once admitted") { try await TestDatabase.backends(of: url.database) == 4 }
                try await burst(8, on: database)
            }
            // A role is the cluster's, not the test database's: it goes with the test.
            try await TestDatabase.withClient(url) { client in
                _ = try await client.query(PostgresQuery(unsafeSQL: "DROP ROLE \(role)"))
            }
        }
    }
}

/// A flag the held leases poll.
private final class ReleaseFlag: Sendable {
    let isSet = Atomic<Bool>(false)
}

/// `sesame_database_pool_waits_total` and `…_refusals_total` in the process's registry.
private func poolCounts() -> (waits: Double, refusals: Double) {
    let text = PrometheusMetrics.exposition()
    return (
        MetricsText.value("sesame_database_pool_waits_total", in: text) ?? 0,
        MetricsText.value("sesame_database_pool_refusals_total", in: text) ?? 0
    )
}

import Foundation
import Logging
import PostgresNIO
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

    /// A pool never run: the choice alone, with the connections' states set by hand.
    func unrunPools(size: Int) throws -> SingleConnectionPools {
        let configuration = try DatabaseURL("postgres://nobody@127.0.0.1:1/none").clientConfiguration
        return SingleConnectionPools(configuration: configuration, size: size, sweepInterval: .seconds(3600), logger: logger)
    }

    /// A `lend` in a task of its own, once it waits in the queue (`waiting` reached).
    func waitingLend(_ pools: SingleConnectionPools, waiting: Int) async throws -> Task<SingleConnectionPools.Member, any Error> {
        let lend = Task { try await pools.lend() }
        try await eventually("\(waiting) waiting") { pools.waiting == waiting }
        return lend
    }

    @Test("a query goes to the first idle connected pool; with every connected one busy, it waits for the first given back or opened, first come first served, and another opens")
    func lendsIdleThenWaits() async throws {
        let pools = try unrunPools(size: 3)
        let (first, second, third) = (pools.members[0], pools.members[1], pools.members[2])

        // Nothing connected yet (PostgreSQL starting): the first waits for its connection; a second opens.
        let waiting = try await pools.lend()
        #expect(waiting === first)
        #expect(pools.openCount == 2)
        #expect(pools.waiting == 0)
        pools.giveBack(waiting)

        first.isConnected.store(true, ordering: .relaxed)
        let idle = try await pools.lend()
        #expect(idle === first)
        #expect(pools.openCount == 2, "an idle connected pool was found: nothing more opens")

        // The first busy, the second open but not connected: the next query waits, never lent a
        // connection that is not open while another is; a third opens.
        let queued = try await waitingLend(pools, waiting: 1)
        #expect(pools.openCount == 3)
        // The second's connection opens: it serves the waiter.
        second.isConnected.store(true, ordering: .relaxed)
        pools.connectionOpened(second)
        #expect(try await queued.value === second)
        #expect(pools.waiting == 0)

        // Both busy, the third not connected: two wait, and are served in their order by whichever is given back first.
        let firstWaiter = try await waitingLend(pools, waiting: 1)
        let secondWaiter = try await waitingLend(pools, waiting: 2)
        pools.giveBack(second)
        #expect(try await firstWaiter.value === second)
        pools.giveBack(idle)
        #expect(try await secondWaiter.value === first)
        #expect(pools.waiting == 0)

        // A cancelled waiter leaves the queue, and the member given back after it stays idle.
        let cancelled = try await waitingLend(pools, waiting: 1)
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(pools.waiting == 0)
        pools.giveBack(first)
        pools.giveBack(second)
        #expect(pools.members.allSatisfy { $0.inFlight.load(ordering: .relaxed) == 0 })

        // Idle again: taken at once, without waiting.
        third.isConnected.store(true, ordering: .relaxed)
        #expect(try await pools.lend() === first)
        #expect(try await pools.lend() === second)
        #expect(try await pools.lend() === third)
    }

    @Test("first come first served: a query arriving while others wait queues behind them, even when a connection is idle")
    func noQueueJumping() async throws {
        let pools = try unrunPools(size: 2)
        let (first, second) = (pools.members[0], pools.members[1])
        first.isConnected.store(true, ordering: .relaxed)
        let busy = try await pools.lend()
        let earlier = try await waitingLend(pools, waiting: 1)
        // The second's connection is open, but nobody has been told yet: a newcomer must not take it.
        second.isConnected.store(true, ordering: .relaxed)
        let later = try await waitingLend(pools, waiting: 2)
        pools.connectionOpened(second)
        #expect(try await earlier.value === second)
        pools.giveBack(busy)
        #expect(try await later.value === first)
        pools.giveBack(first)
        pools.giveBack(second)
        #expect(pools.waiting == 0)
    }

    @Test("a member given back while its connection is closed serves no waiter; it does once its connection opens again")
    func closedMemberServesNoWaiter() async throws {
        let pools = try unrunPools(size: 1)
        let only = pools.members[0]
        only.isConnected.store(true, ordering: .relaxed)
        let lent = try await pools.lend()
        let waiter = try await waitingLend(pools, waiting: 1)
        only.isConnected.store(false, ordering: .relaxed)
        pools.giveBack(lent)
        try await Task.sleep(for: .milliseconds(50))
        #expect(pools.waiting == 1, "a waiter was handed a closed connection")
        only.isConnected.store(true, ordering: .relaxed)
        pools.connectionOpened(only)
        #expect(try await waiter.value === only)
        pools.giveBack(only)
    }

    @Test("past size × 32 queries in flight or waiting, a query is refused at once (busy) instead of queueing; one finished makes room")
    func boundedWait() async throws {
        // Nothing connected: each query waits in a member's own pool for its connection.
        let pools = try unrunPools(size: 2)
        let bound = 2 * SingleConnectionPools.queuedPerConnection
        var lent: [SingleConnectionPools.Member] = []
        for _ in 0..<bound { lent.append(try await pools.lend()) }
        await #expect(throws: StorageError.busy) { try await pools.lend() }
        #expect(pools.members.reduce(0) { $0 + $1.inFlight.load(ordering: .relaxed) } == bound, "a refusal took a place")
        pools.giveBack(lent.removeLast())
        lent.append(try await pools.lend())
        for member in lent { pools.giveBack(member) }

        // Connected and busy: the queue's waiters count toward the bound.
        let connected = try unrunPools(size: 2)
        for member in connected.members { member.isConnected.store(true, ordering: .relaxed) }
        let running = [try await connected.lend(), try await connected.lend()]
        var waiters: [Task<SingleConnectionPools.Member, any Error>] = []
        for count in 1...(bound - 2) { waiters.append(try await waitingLend(connected, waiting: count)) }
        await #expect(throws: StorageError.busy) { try await connected.lend() }
        #expect(connected.waiting == bound - 2, "a refusal took a place")
        for member in running { connected.giveBack(member) }
        for waiter in waiters { connected.giveBack(try await waiter.value) }
        #expect(connected.waiting == 0)
        #expect(connected.members.allSatisfy { $0.inFlight.load(ordering: .relaxed) == 0 })
    }

    @Test("a slow database: queries past the bound are refused while the others wait their turn, and all of those complete")
    func boundedWaitLive() async throws {
        try await withRunningPool(size: 1, sweepInterval: .seconds(3600)) { _, database in
            let bound = SingleConnectionPools.queuedPerConnection
            let released = ReleaseFlag()
            try await withThrowingTaskGroup(of: Void.self) { group in
                // The first lease holds the one connection until released; the rest wait in the queue.
                for _ in 0..<bound {
                    group.addTask {
                        try await database.client.withConnection { _ in
                            while !released.isSet.load(ordering: .relaxed) { try await Task.sleep(for: .milliseconds(10)) }
                        }
                    }
                }
                try await eventually("every lease running or waiting") {
                    let pools = database.client.pools
                    return pools.members.reduce(pools.waiting) { $0 + $1.inFlight.load(ordering: .relaxed) } == bound
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

    @Test("a burst on a new pool spreads over its connections as they open, instead of queueing on the one open at start")
    func coldBurstSpreads() async throws {
        try await withRunningPool(size: 20, sweepInterval: .seconds(3600)) { url, database in
            // 40 statements of 1 s on 20 connections: two rounds once they are open. Queued on the
            // first connection, as each was when lent at once, they took 40 s.
            let started = ContinuousClock.now
            try await withThrowingDiscardingTaskGroup { queries in
                for _ in 0..<40 { queries.addTask { try await database.client.query("SELECT pg_sleep(1)") } }
            }
            let took = ContinuousClock.now - started
            #expect(took < .seconds(8), "40 × 1 s on a new pool of 20 took \(took)")
            #expect(try await TestDatabase.backends(of: url.database) == 20)
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

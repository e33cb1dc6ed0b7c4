import Logging
import PostgresNIO
import Synchronization

/// A database pool made of PostgresNIO pools of one connection each: up to `size` of them, one
/// opened at start and more as queries find every open one busy; an opened one stays open.
///
/// Why not one PostgresNIO pool of `size`: such a pool arms an idle-timeout timer (a task and a
/// `Task.sleep`) each time a connection above its minimum goes back to it, which costs auth about
/// a fifth of its CPU per refresh (docs/scaling.md), and its minimum cannot be raised to its size:
/// with a minimum above one, PostgresNIO 1.33 crashes the process when several new connections
/// are refused at once (it retries one, drops the others, and then fails its precondition that
/// the minimum is open). A pool of one connection whose minimum is one has no connection above
/// its minimum, so no idle timer, and only ever one connection to retry, so nothing to drop.
///
/// A query goes to the first open pool that is idle and whose connection is open. When none is,
/// it opens another (up to `size`) and waits in one queue, first come first served, for whichever
/// connection is free first: one given back, or one that has just opened. So a burst on a new pool
/// spreads over the connections as they open, instead of queueing on the one open at the start,
/// and a connection PostgreSQL refuses (at `max_connections`) or that is reopening holds no query.
/// While no connection is open at all (PostgreSQL down or starting), a query waits in the least busy
/// open pool for its connection, as a PostgresNIO pool's queries do.
///
/// Workaround for two PostgresNIO 1.33 defects, each written up as the issue we would file, with a
/// reproduction: `docs/upstream/postgresnio-pool-minimum-crash.md` and
/// `docs/upstream/postgresnio-pool-timers.md`. Delete it when both are fixed: one `PostgresClient`
/// whose minimum is its maximum then does the same.
final class SingleConnectionPools: Sendable {
    /// One PostgresNIO pool of one connection.
    final class Member: Sendable {
        let client: PostgresClient
        /// Queries and leases on it now (a hint for choosing: a query's rows may still be read after it returns).
        let inFlight = Atomic<Int>(0)
        /// Whether its connection is open: lent by PostgresNIO (so through its start-up) and not closed since.
        let isConnected = Atomic<Bool>(false)

        init(configuration: PostgresClient.Configuration, logger: Logger) {
            var configuration = configuration
            configuration.options.minimumConnections = 1
            configuration.options.maximumConnections = 1
            // PostgresNIO's keep-alive arms a timer each time the connection goes back; the sweep stands in for it.
            configuration.options.keepAliveBehavior = nil
            client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        }
    }

    let members: [Member]
    /// `members[0..<opened]` are running.
    private let opened = Atomic<Int>(1)
    /// Indexes of members to start running (the first runs from the start).
    private let openings: AsyncStream<Int>
    private let open: AsyncStream<Int>.Continuation
    private let sweepInterval: Duration

    /// `size` pools at most, each swept every `sweepInterval` once open.
    init(configuration: PostgresClient.Configuration, size: Int, sweepInterval: Duration, logger: Logger) {
        precondition(size > 0, "a database pool needs at least one connection")
        members = (0..<size).map { _ in Member(configuration: configuration, logger: logger) }
        self.sweepInterval = sweepInterval
        (openings, open) = AsyncStream.makeStream()
        open.yield(0)
    }

    /// How many of the pools are open.
    var openCount: Int { opened.load(ordering: .relaxed) }

    /// How many queries and leases may wait per connection of the pool's size, running ones
    /// included: past `size` × this, `lend` refuses (`StorageError.busy`, answered 503 with
    /// `Retry-After`) instead of queueing without bound while PostgreSQL is slow but answering.
    /// Counted against the pool's size, not the connections open, so a burst at start (one open)
    /// waits for the others to open instead of being refused.
    static let queuedPerConnection = 32

    /// A query or lease waiting for a connection, in `lend`'s queue.
    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Member, any Error>
    }

    /// `lend`'s waiters, first come first served.
    private let waiters = Mutex<[Waiter]>([])
    /// How many wait (changed only under `waiters`' lock; read without it by `giveBack`, so that
    /// giving back without waiters takes no lock).
    private let waiterCount = Atomic<Int>(0)
    private let nextWaiterID = Atomic<UInt64>(0)

    /// A member for one query or lease; hand it back with `giveBack` when done. Waits, when every
    /// open connection is busy, for the first to be given back or to open.
    /// - Throws: `StorageError.busy` when `size` × `queuedPerConnection` run or wait already;
    ///   `CancellationError` when the task is cancelled while waiting.
    func lend() async throws -> Member {
        let openCount = opened.load(ordering: .acquiring)
        // Not past those already waiting: a member given back goes to the first of them.
        if waiterCount.load(ordering: .relaxed) == 0, let idle = takeIdle(among: openCount) { return idle }
        if openCount < members.count,
            opened.compareExchange(expected: openCount, desired: openCount + 1, ordering: .releasing).exchanged {
            open.yield(openCount)
        }
        guard members[0..<openCount].contains(where: { $0.isConnected.load(ordering: .sequentiallyConsistent) }) else {
            return try lendWhileNoneIsConnected(openCount: openCount)
        }
        return try await waitForOne()
    }

    /// An idle member whose connection is open, taken (its `inFlight` from 0 to 1), if there is one.
    private func takeIdle(among openCount: Int) -> Member? {
        for index in 0..<openCount {
            let member = members[index]
            guard member.isConnected.load(ordering: .sequentiallyConsistent) else { continue }
            if member.inFlight.compareExchange(expected: 0, desired: 1, ordering: .sequentiallyConsistent).exchanged { return member }
        }
        return nil
    }

    /// Queries and leases running or waiting, checked against the bound (on the slow paths only).
    private func isFull(openCount: Int, waiting: Int) -> Bool {
        members[0..<openCount].reduce(waiting) { $0 + $1.inFlight.load(ordering: .relaxed) } >= members.count * Self.queuedPerConnection
    }

    /// No connection open (PostgreSQL down or still starting): the least busy open member, which
    /// waits for its connection as a PostgresNIO pool's queries do.
    private func lendWhileNoneIsConnected(openCount: Int) throws(StorageError) -> Member {
        guard !isFull(openCount: openCount, waiting: waiterCount.load(ordering: .relaxed)) else { throw StorageError.busy }
        let chosen = members[0..<openCount].min { $0.inFlight.load(ordering: .relaxed) < $1.inFlight.load(ordering: .relaxed) }!
        chosen.inFlight.wrappingAdd(1, ordering: .sequentiallyConsistent)
        return chosen
    }

    /// Waits in the queue for a member `offer` hands over.
    private func waitForOne() async throws -> Member {
        let id = nextWaiterID.wrappingAdd(1, ordering: .relaxed).newValue
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Member, any Error>) in
                let decided: Result<Member, any Error>? = waiters.withLock { queue in
                    // Counted before looking again, as `giveBack` frees before it counts: one of
                    // the two sees the other, so a member freed meanwhile is never missed.
                    waiterCount.wrappingAdd(1, ordering: .sequentiallyConsistent)
                    let openCount = opened.load(ordering: .acquiring)
                    // With others waiting, a member freed now goes to the first of them.
                    if queue.isEmpty, let idle = takeIdle(among: openCount) {
                        waiterCount.wrappingSubtract(1, ordering: .sequentiallyConsistent)
                        return .success(idle)
                    }
                    if isFull(openCount: openCount, waiting: queue.count) {
                        waiterCount.wrappingSubtract(1, ordering: .sequentiallyConsistent)
                        return .failure(StorageError.busy)
                    }
                    // Cancelled before the handler could find this waiter in the queue.
                    if Task.isCancelled {
                        waiterCount.wrappingSubtract(1, ordering: .sequentiallyConsistent)
                        return .failure(CancellationError())
                    }
                    queue.append(Waiter(id: id, continuation: continuation))
                    return nil
                }
                if let decided { continuation.resume(with: decided) }
            }
        } onCancel: {
            let left: Waiter? = waiters.withLock { queue in
                guard let index = queue.firstIndex(where: { $0.id == id }) else { return nil }
                waiterCount.wrappingSubtract(1, ordering: .sequentiallyConsistent)
                return queue.remove(at: index)
            }
            left?.continuation.resume(throwing: CancellationError())
        }
    }

    /// How many queries and leases wait for a connection.
    var waiting: Int { waiterCount.load(ordering: .relaxed) }

    /// A member whose connection has just opened (`isConnected` set) serves the first waiter.
    func connectionOpened(_ member: Member) {
        if waiterCount.load(ordering: .sequentiallyConsistent) > 0 { offer(member) }
    }

    func giveBack(_ member: Member) {
        let left = member.inFlight.wrappingSubtract(1, ordering: .sequentiallyConsistent).newValue
        if left == 0, waiterCount.load(ordering: .sequentiallyConsistent) > 0 { offer(member) }
    }

    /// Hands `member`, if it is idle and connected, to the first waiter.
    private func offer(_ member: Member) {
        let first: Waiter? = waiters.withLock { queue in
            guard !queue.isEmpty, member.isConnected.load(ordering: .sequentiallyConsistent),
                member.inFlight.compareExchange(expected: 0, desired: 1, ordering: .sequentiallyConsistent).exchanged
            else { return nil }
            waiterCount.wrappingSubtract(1, ordering: .sequentiallyConsistent)
            return queue.removeFirst()
        }
        first?.continuation.resume(returning: member)
    }

    /// Runs every member opened, watches each one's connection, and sweeps them, until cancelled.
    func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.sweep() }
            for await index in openings {
                let member = members[index]
                group.addTask { await member.client.run() }
                group.addTask { await Self.watch(member, of: self) }
            }
            group.cancelAll()  // cancelled: closes every connection
        }
    }

    /// Keeps `isConnected` true while the member's connection is open: true once PostgresNIO lends
    /// it (it lends only a connection that finished its start-up with PostgreSQL), false when it
    /// closes, until PostgresNIO has opened the next one. One wait a connection, nothing per query.
    /// A connection that opens serves the first waiter.
    private static func watch(_ member: Member, of pools: SingleConnectionPools) async {
        while !Task.isCancelled {
            do {
                let closed = try await member.client.withConnection { connection in connection.closeFuture }
                member.isConnected.store(true, ordering: .sequentiallyConsistent)
                pools.connectionOpened(member)
                try? await closed.get()
                member.isConnected.store(false, ordering: .sequentiallyConsistent)
            } catch {
                try? await Task.sleep(for: .milliseconds(500))  // the pool is closing, or lending failed
            }
        }
    }

    /// Every `sweepInterval`, one short statement on each open member: no connection stays idle
    /// long enough for a firewall or NAT between here and PostgreSQL to forget it, and one that
    /// died while idle fails its statement and is replaced. A round waits for its last statement
    /// before the next one is timed.
    private func sweep() async {
        while (try? await Task.sleep(for: sweepInterval)) != nil {
            await withDiscardingTaskGroup { round in
                for member in members[0..<openCount] {
                    round.addTask {
                        member.inFlight.wrappingAdd(1, ordering: .relaxed)
                        defer { self.giveBack(member) }
                        _ = try? await member.client.query(Self.sweepStatement, logger: Self.quiet)
                    }
                }
            }
        }
    }

    static let sweepStatement: PostgresQuery = "SELECT 1 AS sweep"
    private static let quiet = Logger(label: "sesame.database.sweep", factory: { _ in SwiftLogNoOpLogHandler() })
}

import Logging
import Metrics
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
/// A query goes to the first open pool that is idle and whose connection is open; when none is,
/// it opens another (up to `size`) and meanwhile queues on the least busy one whose connection is
/// open, so a connection PostgreSQL refuses (at `max_connections`) or that is reopening holds no
/// query; with none open, on one that was open before (any, at start-up).
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
        /// Whether it ever had an open connection: PostgreSQL admits it, even if it is reopening now.
        let wasConnected = Atomic<Bool>(false)

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

    /// A member for one query or lease; hand it back with `giveBack` when done.
    /// - Throws: `StorageError.busy` when `size` × `queuedPerConnection` are in flight already.
    func lend() throws(StorageError) -> Member {
        let openCount = opened.load(ordering: .acquiring)
        var leastBusy: Member?
        var leastBusyLoad = Int.max
        for index in 0..<openCount {
            let member = members[index]
            guard member.isConnected.load(ordering: .relaxed) else { continue }
            if member.inFlight.compareExchange(expected: 0, desired: 1, ordering: .relaxed).exchanged { return member }
            let load = member.inFlight.load(ordering: .relaxed)
            if load < leastBusyLoad { (leastBusy, leastBusyLoad) = (member, load) }
        }
        if openCount < members.count,
            opened.compareExchange(expected: openCount, desired: openCount + 1, ordering: .releasing).exchanged {
            open.yield(openCount)
        }
        // None idle: refuse past the bound (the members' loads, summed only on this slow path).
        let waiting = members[0..<openCount].reduce(0) { $0 + $1.inFlight.load(ordering: .relaxed) }
        guard waiting < members.count * Self.queuedPerConnection else {
            Counter(label: "sesame_database_pool_refusals_total").increment()
            throw StorageError.busy
        }
        // Only this slow path counts: a query that found an idle connection did not wait.
        Counter(label: "sesame_database_pool_waits_total").increment()
        // None idle and connected: the least busy connected one; none connected (PostgreSQL down or
        // restarting), the least busy that was connected before, which PostgreSQL admits; at start-up
        // (none ever connected), the least busy open one. Each waits for its connection as a
        // PostgresNIO pool's queries do (a query on a connection PostgreSQL refuses waits until it is
        // admitted: only at start-up, since a member that never connected is chosen only then).
        let load: (Member, Member) -> Bool = { $0.inFlight.load(ordering: .relaxed) < $1.inFlight.load(ordering: .relaxed) }
        let chosen =
            leastBusy
            ?? members[0..<openCount].filter { $0.wasConnected.load(ordering: .relaxed) }.min(by: load)
            ?? members[0..<openCount].min(by: load)!
        chosen.inFlight.wrappingAdd(1, ordering: .relaxed)
        return chosen
    }

    func giveBack(_ member: Member) {
        member.inFlight.wrappingSubtract(1, ordering: .relaxed)
    }

    /// Runs every member opened, watches each one's connection, and sweeps them, until cancelled.
    func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.sweep() }
            for await index in openings {
                let member = members[index]
                group.addTask { await member.client.run() }
                group.addTask { await Self.watch(member) }
            }
            group.cancelAll()  // cancelled: closes every connection
        }
    }

    /// Keeps `isConnected` true while the member's connection is open: true once PostgresNIO lends
    /// it (it lends only a connection that finished its start-up with PostgreSQL), false when it
    /// closes, until PostgresNIO has opened the next one. One wait a connection, nothing per query.
    private static func watch(_ member: Member) async {
        while !Task.isCancelled {
            do {
                let closed = try await member.client.withConnection { connection in connection.closeFuture }
                member.isConnected.store(true, ordering: .relaxed)
                member.wasConnected.store(true, ordering: .relaxed)
                try? await closed.get()
                member.isConnected.store(false, ordering: .relaxed)
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

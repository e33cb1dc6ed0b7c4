import ServiceLifecycle
import SesameStorage
import Synchronization

/// Watches every request that may wait on PostgreSQL with one task for the whole service: when
/// some have run longer than `patience`, it probes the database once, and if the probe fails it
/// cancels them (which releases their places in the pool's queue) and marks them abandoned.
///
/// Why one watcher: a watchdog per request (a second child task and a timer each) cost every
/// request a task and a timer while PostgreSQL was up, which it almost always is.
///
/// Workaround for PostgresNIO's connection requests, which have no deadline of their own
/// (`docs/upstream/postgresnio-lease-without-deadline.md`, with when this can go).
final class DatabaseStallWatch: Service, Sendable {
    let database: Database
    let patience: Duration
    let probeTimeout: Duration

    /// A request being watched: when it started, and its task, to cancel.
    private struct Watched {
        let started: ContinuousClock.Instant
        let task: RequestTask
        var abandoned = false
    }

    private struct State {
        var watched: [UInt64: Watched] = [:]
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())

    init(database: Database, patience: Duration = .seconds(2), probeTimeout: Duration = .seconds(1)) {
        self.database = database
        self.patience = patience
        self.probeTimeout = probeTimeout
    }

    /// Runs `operation` in a child task, watched; throws `Abandoned` when the watcher cut it short.
    ///
    /// A child task, not the caller's: cancelling a connection's own task would close it before
    /// the 503 is written.
    func watching<Result: Sendable>(_ operation: @escaping @Sendable () async throws -> Result) async throws -> Result {
        try await withThrowingTaskGroup(of: Result.self) { group in
            group.addTask { try await self.watchingCurrentTask(operation) }
            return try await group.next()!
        }
    }

    private func watchingCurrentTask<Result>(_ operation: () async throws -> Result) async throws -> Result {
        let id = withUnsafeCurrentTask { task in
            state.withLock { state in
                state.nextID += 1
                if let task { state.watched[state.nextID] = Watched(started: .now, task: RequestTask(task)) }
                return state.nextID
            }
        }
        let result: Swift.Result<Result, any Error>
        do {
            result = .success(try await operation())
        } catch {
            result = .failure(error)
        }
        // Removed before this frame returns: the watcher never holds a task that moved on.
        let abandoned = state.withLock { $0.watched.removeValue(forKey: id)?.abandoned ?? false }
        if abandoned, case .failure = result { throw Abandoned() }
        return try result.get()
    }

    /// The watcher cancelled the request: PostgreSQL did not answer while it waited.
    struct Abandoned: Error {}

    /// Looks every quarter of `patience` for requests running longer than it.
    func run() async throws {
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            try? await cancelWhenGracefulShutdown { [patience] in try await Task.sleep(for: patience / 4) }
            let now = ContinuousClock.now
            let stalled = state.withLock { state in state.watched.contains { !$0.value.abandoned && now - $0.value.started >= patience } }
            guard stalled, await !database.isReachable(timeout: probeTimeout) else { continue }
            let cutoff = ContinuousClock.now - patience
            state.withLock { state in
                for (id, request) in state.watched where !request.abandoned && request.started <= cutoff {
                    state.watched[id]?.abandoned = true
                    request.task.cancel()
                }
            }
        }
    }
}

/// A watched request's task, held only between its registration and its removal, both on that
/// task (`DatabaseStallWatch.watchingCurrentTask`) and the removal under the lock the cancel is made under,
/// so it never outlives the request it cancels; cancelling a running task from another thread is
/// what `Task.cancel()` does.
private struct RequestTask: @unchecked Sendable {
    private let task: UnsafeCurrentTask
    init(_ task: UnsafeCurrentTask) { self.task = task }
    func cancel() { task.cancel() }
}

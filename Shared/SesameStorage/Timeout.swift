import Synchronization

/// The operation did not finish within its time limit.
public struct TimeoutError: Error, CustomStringConvertible {
    public var description: String { "operation timed out" }
}

/// Runs `operation`, cancelling it and throwing `TimeoutError` if it takes longer than `limit`.
///
/// PostgresNIO waits for a connection for a long time while the server is down; callers that must
/// answer quickly (readiness, start-up retries) bound the wait with this. The caller is answered at
/// the limit even when the operation does not end on cancellation (`AbandonableOperation`).
public func withTimeout<Result: Sendable>(
    _ limit: Duration,
    _ operation: @escaping @Sendable () async throws -> Result
) async throws -> Result {
    try await AbandonableOperation.run(operation, limit: limit)
}

/// An operation run in a task of its own, so that its caller can stop waiting for it.
///
/// Why not a task group: a group returns only once every child has ended, and some awaits never
/// end, cancelled or not. PostgresNIO (1.33) writes a query to its channel without a promise, so a
/// query written just after the server closed the connection is never answered. A caller that
/// gives up on such an operation is answered at once; the operation is cancelled and left to end on
/// its own, if it ever does.
///
/// Workaround for that defect (`docs/upstream/postgresnio-write-without-promise.md`, with a
/// reproduction; `UpstreamDefectTests` fails once it is fixed): then a task group will do.
public enum AbandonableOperation {
    /// Runs `operation` and returns what it returns, unless it is still running after `limit`
    /// (throws `TimeoutError`) or `giveUp`, asked every `checkInterval`, returns an error first
    /// (throws that error). The caller's cancellation is answered at once with `CancellationError`.
    public static func run<Result: Sendable>(
        _ operation: @escaping @Sendable () async throws -> Result,
        limit: Duration,
        checkInterval: Duration = .milliseconds(100),
        giveUp: (@Sendable () -> (any Error)?)? = nil
    ) async throws -> Result {
        let race = Race<Result>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                race.start(continuation, operation: operation) {
                    let clock = ContinuousClock()
                    let deadline = clock.now + limit
                    while clock.now < deadline {
                        let pause = giveUp == nil ? deadline - clock.now : min(checkInterval, deadline - clock.now)
                        guard (try? await Task.sleep(for: pause)) != nil else { return nil }
                        if let reason = giveUp?() { return reason }
                    }
                    return TimeoutError()
                }
            }
        } onCancel: {
            race.decide(.failure(CancellationError()))
        }
    }

    /// The first of the operation, its watcher and the caller's cancellation to finish decides what
    /// the caller gets; the others are cancelled.
    private final class Race<Value: Sendable>: Sendable {
        private struct State {
            var continuation: CheckedContinuation<Value, any Error>?
            /// Set once decided (possibly before `start`, by the caller's cancellation).
            var outcome: Swift.Result<Value, any Error>?
            var contenders: [Task<Void, Never>] = []
        }
        private let state = Mutex(State())

        func start(
            _ continuation: CheckedContinuation<Value, any Error>,
            operation: @escaping @Sendable () async throws -> Value,
            watcher: @escaping @Sendable () async -> (any Error)?
        ) {
            if let outcome = state.withLock({ state in
                if state.outcome == nil { state.continuation = continuation }
                return state.outcome
            }) {
                continuation.resume(with: outcome)
                return
            }
            let work = Task {
                do { decide(.success(try await operation())) } catch { decide(.failure(error)) }
            }
            let watch = Task {
                if let reason = await watcher() { decide(.failure(reason)) }
            }
            let lost = state.withLock { state in
                state.contenders = [work, watch]
                return state.outcome != nil
            }
            if lost {
                work.cancel()
                watch.cancel()
            }
        }

        func decide(_ outcome: Swift.Result<Value, any Error>) {
            let decided: (CheckedContinuation<Value, any Error>?, [Task<Void, Never>])? = state.withLock { state in
                guard state.outcome == nil else { return nil }
                state.outcome = outcome
                defer { state.continuation = nil }
                return (state.continuation, state.contenders)
            }
            guard let (continuation, contenders) = decided else { return }
            for contender in contenders { contender.cancel() }
            continuation?.resume(with: outcome)
        }
    }
}

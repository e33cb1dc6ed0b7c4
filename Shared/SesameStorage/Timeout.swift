/// The operation did not finish within its time limit.
public struct TimeoutError: Error, CustomStringConvertible {
    public var description: String { "operation timed out" }
}

/// Runs `operation`, cancelling it and throwing `TimeoutError` if it takes longer than `limit`.
///
/// PostgresNIO waits for a connection for a long time while the server is down; callers that must
/// answer quickly (readiness, start-up retries) bound the wait with this.
public func withTimeout<Result: Sendable>(
    _ limit: Duration,
    _ operation: @escaping @Sendable () async throws -> Result
) async throws -> Result {
    try await withThrowingTaskGroup(of: Result.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            try await Task.sleep(for: limit)
            throw TimeoutError()
        }
        defer { group.cancelAll() }
        return try await group.next()!
    }
}

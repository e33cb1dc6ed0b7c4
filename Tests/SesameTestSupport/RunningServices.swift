import Logging
import ServiceLifecycle

/// Runs services in a `ServiceGroup` around a test body, then shuts them down gracefully, the way
/// the executables do.
public func withRunningServices<Result: Sendable>(
    _ services: [any Service],
    logger: Logger = Logger(label: "test-services"),
    _ body: () async throws -> Result
) async throws -> Result {
    let group = ServiceGroup(configuration: .init(services: services, logger: logger))
    return try await withThrowingTaskGroup(of: Void.self) { tasks in
        tasks.addTask { try await group.run() }
        do {
            let result = try await body()
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
            return result
        } catch {
            await group.triggerGracefulShutdown()
            try? await tasks.waitForAll()
            throw error
        }
    }
}

/// Waits until `condition` holds, polling, or throws after `timeout`.
public func eventually(
    timeout: Duration = .seconds(20), pollEvery interval: Duration = .milliseconds(50), _ what: String,
    _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: interval)
    }
    throw TestDatabase.Unavailable(description: "timed out after \(timeout): \(what)")
}

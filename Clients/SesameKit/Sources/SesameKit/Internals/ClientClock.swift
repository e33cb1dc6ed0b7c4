import Foundation

/// Time as SesameKit reads it, made a parameter so tests (and `SesameKitTesting`'s device) can move it.
package struct ClientClock: Sendable {
    /// The wall clock, which the user can set.
    package var now: @Sendable () -> Date
    /// Seconds the system has been up: it never goes back while the device runs (and restarts at
    /// zero with the device), so it measures ages the user cannot shorten by setting the clock back.
    package var uptime: @Sendable () -> TimeInterval
    /// Waits (a backoff, a retry).
    package var sleep: @Sendable (Duration) async throws -> Void

    package init(
        now: @escaping @Sendable () -> Date = { Date() },
        uptime: @escaping @Sendable () -> TimeInterval = { ProcessInfo.processInfo.systemUptime },
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    ) {
        self.now = now
        self.uptime = uptime
        self.sleep = sleep
    }
}

import Foundation

#if canImport(Darwin)
import Darwin
#endif

/// Work the system is asked to let finish when the app leaves the foreground: iOS suspends an app
/// a few seconds after that, and a token renewal cut there loses its reply (Sesame has rotated the
/// refresh token; the app never saved the new one).
package protocol BackgroundActivity: Sendable {
    /// Runs `body`, asking the system for time to finish it should the app be sent to the background.
    func run<T: Sendable>(named name: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T
}

/// No system to ask (Linux): `body` just runs.
package struct UnmanagedActivity: BackgroundActivity {
    package init() {}

    package func run<T: Sendable>(named name: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        try await body()
    }
}

#if canImport(Darwin)
/// `ProcessInfo.performExpiringActivity(withReason:using:)`: Apple's call for such work in apps and
/// app extensions alike (`UIApplication.beginBackgroundTask` is unavailable in extensions). The
/// activity lasts as long as its block runs, so the block waits, on the system's own queue and not
/// on Swift's cooperative pool, until the work ends or the system says time is up (`expired`).
struct ExpiringActivity: BackgroundActivity {
    func run<T: Sendable>(named name: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let ended = DispatchSemaphore(value: 0)
        ProcessInfo.processInfo.performExpiringActivity(withReason: name) { expired in
            // Called a second time with `expired` when time is up: the waiting call returns then.
            if expired { ended.signal() } else { ended.wait() }
        }
        defer { ended.signal() }
        return try await body()
    }
}
#endif

/// The platform's own `BackgroundActivity`: `ExpiringActivity` on Apple platforms, else `UnmanagedActivity`.
func platformBackgroundActivity() -> any BackgroundActivity {
    #if canImport(Darwin)
    ExpiringActivity()
    #else
    UnmanagedActivity()
    #endif
}

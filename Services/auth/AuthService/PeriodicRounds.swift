import Foundation
import Logging
import ServiceLifecycle
import SesameStorage

/// Runs `round` every `interval` until graceful shutdown, each round bounded by `bound`: the loop of
/// auth's background services (receipt trades, the attestation ramp). A round that fails or runs
/// out of time is logged at debug and tried again at the next.
func runPeriodicRounds(
    every interval: Duration, bound: Duration, named name: String, logger: Logger, _ round: @escaping @Sendable () async throws -> Void
) async {
    while !Task.isShuttingDownGracefully, !Task.isCancelled {
        do {
            _ = try await cancelWhenGracefulShutdown { try await withTimeout(bound) { try await round() } }
        } catch {
            logger.debug("\(name) round skipped", metadata: ["error": "\(String(reflecting: error))"])
        }
        try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
    }
}

/// How long a round waits before asking Apple again after `failures` failures in a row: 1, 2, 4 …
/// minutes, at most `cap` seconds.
func retryDelay(afterFailures failures: Int, cap: TimeInterval) -> TimeInterval {
    min(60 * pow(2, Double(min(failures - 1, 20))), cap)
}

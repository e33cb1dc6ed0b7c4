import Logging
import ServiceLifecycle
import SesameStorage
import SesameTokens

/// Periodic upkeep: reload the token signing keys (another instance may have rotated them) and
/// delete expired challenges.
struct AuthMaintenance: Service {
    let tokens: TokenAuthority
    let challenges: ChallengeStore
    let logger: Logger
    var interval: Duration = .seconds(60)

    func run() async throws {
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            do {
                // Bounded, and abandoned on shutdown: PostgresNIO waits a minute for a connection
                // while PostgreSQL is down, which would hold up a graceful stop.
                let (tokens, challenges) = (tokens, challenges)
                let pruned = try await cancelWhenGracefulShutdown {
                    try await withTimeout(.seconds(30)) {
                        try await tokens.reload()
                        return try await challenges.pruneExpired()
                    }
                }
                if pruned > 0 { logger.debug("pruned expired challenges", metadata: ["count": "\(pruned)"]) }
            } catch {
                // PostgreSQL may be down or not migrated yet; readiness reports that. Try again later.
                logger.debug("auth maintenance skipped", metadata: ["error": "\(error)"])
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
        }
    }
}

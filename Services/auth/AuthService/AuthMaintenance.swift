import Logging
import ServiceLifecycle
import SesameConfiguration
import SesameStorage
import SesameTokens

/// Periodic upkeep: rotate the token signing key when it is due, reload the signing keys (another
/// instance may have rotated them) and delete expired challenges and the ids of expired consumed
/// single-use tokens.
struct AuthMaintenance: Service {
    let tokens: TokenAuthority
    let signingKeys: SigningKeyStore
    let challenges: ChallengeStore
    let consumedTokens: ConsumedAPITokens
    let logger: Logger
    var interval: Duration = .seconds(60)

    /// How long a scheduled new key is published before it signs: longer than the JWKS may be
    /// cached (`Cache-Control: max-age=300`), so no verifier meets a token signed by a key it
    /// cannot know yet.
    static let publicationLead: Duration = .seconds(600)

    func run() async throws {
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            do {
                // Bounded, and abandoned on shutdown: PostgresNIO waits a minute for a connection
                // while PostgreSQL is down, which would hold up a graceful stop.
                let pruned = try await cancelWhenGracefulShutdown { [self] in
                    try await withTimeout(.seconds(30)) { try await upkeep() }
                }
                if pruned > 0 { logger.debug("pruned expired challenges and consumed tokens", metadata: ["count": "\(pruned)"]) }
            } catch {
                // PostgreSQL may be down or not migrated yet; readiness reports that. Try again later.
                logger.debug("auth maintenance skipped", metadata: ["error": "\(String(reflecting: error))"])
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
        }
    }

    /// One round; returns the number of challenges and consumed token ids pruned.
    func upkeep() async throws -> Int {
        let lifetimes = tokens.lifetimes
        try await signingKeys.rotateIfDue(
            every: lifetimes.signingKeyRotation, activatingAfter: Self.publicationLead, verifyRetiredFor: lifetimes.retiredKeyVerification)
        try await tokens.reload()
        return try await challenges.pruneExpired() + consumedTokens.pruneExpired()
    }
}

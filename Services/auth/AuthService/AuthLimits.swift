import Foundation
import HTTPTypes
import SesameHTTP

/// Abuse limits on the endpoints that cost the most: per client address on challenge and attest,
/// and an admission limit per app on attest. Apple asks servers to keep attestations below about
/// 100 per second per app; past the admission limit clients are told to come back after a jittered
/// delay, so a thundering herd of new installs spreads out instead of retrying in step.
struct AuthLimits: Sendable {
    // Generous per address: many devices can share one behind carrier-grade NAT.
    var challengePerClient = RateLimiter(.init(rate: 20, burst: 100))
    var attestPerClient = RateLimiter(.init(rate: 10, burst: 50))
    var attestAdmissionPerApp: RateLimiter

    /// - Parameter admissionRate: attestations admitted per second per app (`SESAME_ATTEST_ADMISSION_RATE`).
    init(admissionRate: Int) {
        attestAdmissionPerApp = RateLimiter(.init(rate: Double(admissionRate), burst: Double(admissionRate * 2)))
    }

    /// Spends a token of `key` in `limiter`, or throws 429 with `Retry-After` (plus up to
    /// `jitterSeconds` random seconds).
    static func enforce(_ limiter: RateLimiter, key: String, jitterSeconds: Int = 0) throws {
        guard let wait = limiter.acquire(key) else { return }
        let seconds = Int((Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18).rounded(.up))
        let retryAfter = max(1, seconds) + Int.random(in: 0...jitterSeconds)
        throw AuthErrors.rateLimited(retryAfter: retryAfter)
    }
}

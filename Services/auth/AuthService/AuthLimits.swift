import SesameHTTP

/// Abuse limits on the endpoints that cost the most: per client address on challenge, attest and
/// refresh, per attested key on refresh, and an admission limit per app on attest. Apple asks
/// servers to keep attestations below about 100 per second per app; past the admission limit
/// clients are told to come back after a jittered delay, so a thundering herd of new installs
/// spreads out instead of retrying in step.
struct AuthLimits: Sendable {
    // Generous per address: many devices can share one behind carrier-grade NAT.
    var challengePerClient = RateLimiter(.init(rate: 20, burst: 100))
    var attestPerClient = RateLimiter(.init(rate: 10, burst: 50))
    var refreshPerClient = RateLimiter(.init(rate: 20, burst: 100))
    // One install refreshes every 15 minutes; a handful at once covers retries.
    var refreshPerKey = RateLimiter(.init(rate: 0.2, burst: 10))
    var attestAdmissionPerApp: RateLimiter
    // The tiers below attested cost an attacker nothing but a request: far less than attest.
    var debugPerClient = RateLimiter(.init(rate: 1, burst: 20))
    var unattestedPerClient = RateLimiter(.init(rate: 0.2, burst: 5))
    var unattestedAdmissionPerApp: RateLimiter

    /// - Parameter admissionRate: attestations admitted per second per app (`SESAME_ATTEST_ADMISSION_RATE`).
    init(admissionRate: Int) {
        attestAdmissionPerApp = RateLimiter(.init(rate: Double(admissionRate), burst: Double(admissionRate * 2)))
        unattestedAdmissionPerApp = RateLimiter(.init(rate: Double(admissionRate) / 5, burst: Double(admissionRate)))
    }
}

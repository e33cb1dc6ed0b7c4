import Logging
import SesameHTTP
import SesameStorage

/// Abuse limits on the endpoints that cost the most: per client address on challenge, attest,
/// refresh and API tokens, per attested key on refresh and API tokens (each per instance: a gateway spreads one client over the
/// replicas), and an admission budget per app on attest, shared by every replica. Apple asks
/// servers to keep attestations below about 100 per second per app; past the admission limit
/// clients are told to come back after a jittered delay, so a thundering herd of new installs
/// spreads out instead of retrying in step.
struct AuthLimits: Sendable {
    // Generous per address: many devices can share one behind carrier-grade NAT.
    let challengePerClient: RateLimiter
    let attestPerClient: RateLimiter
    let refreshPerClient: RateLimiter
    let apiTokenPerClient: RateLimiter
    // One install refreshes every 15 minutes; a handful at once covers retries.
    var refreshPerKey = RateLimiter(.init(rate: 0.2, burst: 10))
    // An API token per request to the app's API at most: a burst, then two a second.
    var apiTokenPerKey = RateLimiter(.init(rate: 2, burst: 20))
    // Consume and assertion checks sit on the hot path of the app's own API: only a runaway
    // backend meets this.
    var verifyPerBackendKey = RateLimiter(.init(rate: 5000, burst: 10000))
    let attestAdmission: AdmissionBudget
    // The tiers below attested cost an attacker nothing but a request: far less than attest.
    var debugPerClient = RateLimiter(.init(rate: 1, burst: 20))
    var unattestedPerClient = RateLimiter(.init(rate: 0.2, burst: 5))
    // A device reports a failed attestation after trying for seconds: a few at once at most.
    var failureReportPerClient = RateLimiter(.init(rate: 0.2, burst: 5))
    let unattestedAdmission: AdmissionBudget

    /// - Parameters:
    ///   - admissionRate: attestations admitted per second per app, across every replica
    ///     (`SESAME_ATTEST_ADMISSION_RATE`).
    ///   - attestRatePerClient: attests per second per client address (`SESAME_ATTEST_RATE_PER_CLIENT`).
    init(admissionRate: Int, attestRatePerClient: Int, database: Database, logger: Logger) {
        let perClient = Double(attestRatePerClient)
        attestPerClient = RateLimiter(.init(rate: perClient, burst: perClient * 5))
        challengePerClient = RateLimiter(.init(rate: perClient * 2, burst: perClient * 10))
        refreshPerClient = RateLimiter(.init(rate: perClient * 2, burst: perClient * 10))
        apiTokenPerClient = RateLimiter(.init(rate: perClient * 2, burst: perClient * 10))
        let rate = Double(admissionRate)
        attestAdmission = AdmissionBudget(database: database, purpose: "attest", rate: rate, burst: rate * 2, logger: logger)
        unattestedAdmission = AdmissionBudget(database: database, purpose: "unattested", rate: rate / 5, burst: rate, logger: logger)
    }
}

import HTTPTypes
import SesameConfiguration

extension RateLimiter {
    /// Spends a token of `key`, or throws `429 rate_limited` with `Retry-After` (plus up to
    /// `jitterSeconds` random seconds, so clients told to wait do not return in step).
    public func enforce(_ key: String, jitterSeconds: Int = 0) throws {
        guard let wait = acquire(key) else { return }
        throw APIError.rateLimited(retryAfter: max(1, wait.secondsRoundedUp) + Int.random(in: 0...jitterSeconds))
    }
}

extension APIError {
    /// `429 rate_limited` with `Retry-After`.
    public static func rateLimited(retryAfter seconds: Int) -> APIError {
        APIError(
            .tooManyRequests, code: CommonErrorCode.rateLimited, message: "Too many requests; retry after \(seconds) seconds.",
            headers: [.retryAfter: String(seconds)])
    }
}

import SesameConfiguration
import Synchronization

/// Token buckets keyed by a string (a client address, an app id): each key may spend `burst`
/// requests at once and gets `rate` back per second.
public final class RateLimiter: Sendable {
    /// A bucket's size and refill rate.
    public struct Rule: Sendable, Equatable {
        /// Tokens per second.
        public let rate: Double
        /// The bucket's capacity.
        public let burst: Double

        public init(rate: Double, burst: Double) {
            self.rate = rate
            self.burst = burst
        }
    }

    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    public let rule: Rule
    private let maximumKeys: Int
    private let buckets = Mutex<[String: Bucket]>([:])

    /// - Parameter maximumKeys: bounds memory under a flood of distinct keys; past it, idle
    ///   (full) buckets are dropped first.
    public init(_ rule: Rule, maximumKeys: Int = 100_000) {
        self.rule = rule
        self.maximumKeys = maximumKeys
    }

    /// Spends one token of `key`'s bucket: nil when the request may go ahead, otherwise how long
    /// until a token is available.
    public func acquire(_ key: String, now: ContinuousClock.Instant = .now) -> Duration? {
        buckets.withLock { buckets in
            var bucket = buckets[key] ?? Bucket(tokens: rule.burst, updated: now)
            let elapsed = now - bucket.updated
            let seconds = elapsed.inSeconds
            bucket.tokens = min(rule.burst, bucket.tokens + max(0, seconds) * rule.rate)
            bucket.updated = now
            if buckets[key] == nil, buckets.count >= maximumKeys { evictIdle(&buckets, now: now) }
            guard bucket.tokens >= 1 else {
                buckets[key] = bucket
                return .milliseconds(Int64(((1 - bucket.tokens) / rule.rate * 1000).rounded(.up)))
            }
            bucket.tokens -= 1
            buckets[key] = bucket
            return nil
        }
    }

    /// How long until `key` has a token, without spending one; nil when it has one now.
    public func wait(for key: String, now: ContinuousClock.Instant = .now) -> Duration? {
        buckets.withLock { buckets in
            guard let bucket = buckets[key] else { return nil }
            let tokens = min(rule.burst, bucket.tokens + max(0, (now - bucket.updated).inSeconds) * rule.rate)
            guard tokens < 1 else { return nil }
            return .milliseconds(Int64(((1 - tokens) / rule.rate * 1000).rounded(.up)))
        }
    }

    /// Drops buckets that have refilled completely: forgetting them changes nothing. If every
    /// bucket is busy, the oldest half go (a flood of distinct keys must not exhaust memory).
    private func evictIdle(_ buckets: inout [String: Bucket], now: ContinuousClock.Instant) {
        let fullAfter = Duration.seconds(rule.burst / rule.rate)
        buckets = buckets.filter { now - $0.value.updated < fullAfter }
        if buckets.count >= maximumKeys {
            let newest = buckets.sorted { $0.value.updated > $1.value.updated }.prefix(maximumKeys / 2)
            buckets = Dictionary(uniqueKeysWithValues: newest.map { ($0.key, $0.value) })
        }
    }
}

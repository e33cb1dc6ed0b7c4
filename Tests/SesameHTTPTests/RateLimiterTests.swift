import SesameHTTP
import Testing

@Suite("Rate limiter")
struct RateLimiterTests {
    @Test("a key spends its burst, is told how long to wait, and refills at the rate")
    func burstAndRefill() {
        let limiter = RateLimiter(.init(rate: 2, burst: 3))
        let start = ContinuousClock.now
        for _ in 0..<3 { #expect(limiter.acquire("a", now: start) == nil) }
        #expect(limiter.acquire("a", now: start) == .milliseconds(500))
        // Other keys have buckets of their own.
        #expect(limiter.acquire("b", now: start) == nil)
        #expect(limiter.acquire("a", now: start + .milliseconds(500)) == nil)
        #expect(limiter.acquire("a", now: start + .milliseconds(500)) != nil)
        // Refill never exceeds the burst.
        for _ in 0..<3 { #expect(limiter.acquire("a", now: start + .seconds(60)) == nil) }
        #expect(limiter.acquire("a", now: start + .seconds(60)) != nil)
    }

    @Test("a flood of distinct keys stays bounded and idle buckets are forgotten without effect")
    func boundedKeys() {
        let limiter = RateLimiter(.init(rate: 1, burst: 1), maximumKeys: 100)
        let start = ContinuousClock.now
        for index in 0..<10_000 { _ = limiter.acquire("key-\(index)", now: start) }
        // A busy key is still limited after the flood; a key seen long ago starts afresh.
        #expect(limiter.acquire("busy", now: start) == nil)
        #expect(limiter.acquire("busy", now: start) != nil)
        #expect(limiter.acquire("key-0", now: start + .seconds(10)) == nil)
    }
}

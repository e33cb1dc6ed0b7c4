import Testing

@testable import SesameStorage

@Suite("Unknown credentials are remembered briefly and within a bound")
struct RecentlyUnknownTests {
    @Test("a hash is known for its lifetime, then forgotten; past the capacity the oldest half goes")
    func boundedAndExpiring() {
        let set = RecentlyUnknown(capacity: 100, lifetime: .seconds(60))
        let start = ContinuousClock.now
        set.insert("a", now: start)
        #expect(set.contains("a", now: start + .seconds(59)))
        #expect(!set.contains("a", now: start + .seconds(61)))
        for index in 0..<101 { set.insert("k\(index)", now: start) }
        #expect(!set.contains("a", now: start) && !set.contains("k0", now: start), "the oldest were kept past the capacity")
        #expect(set.contains("k100", now: start))
    }
}

import Testing

@testable import SesameServer

@Suite("Services raise their descriptor limit at start")
struct DescriptorLimitTests {
    @Test("after raise, the soft limit is the hard limit (or the ceiling below it)")
    func raisesToHardLimit() throws {
        let limit = try #require(DescriptorLimit.raise())
        #expect(DescriptorLimit.current == limit)
        // A ceiling below the limit in force leaves it alone (never lowered).
        #expect(DescriptorLimit.raise(ceiling: 64) == limit)
        #expect(limit >= 1_024)
    }
}

import Foundation
import SesameOutbound
import Synchronization
import Testing

/// Lookups of user-configured names: one per name at a time, a deadline per caller, a bound on
/// names at once (issue 72, medium 2).
@Suite("Host resolver: single flight, deadline, bound")
struct HostResolverTests {
    /// A lookup that takes `delay` and counts its calls per name.
    final class SlowLookUp: Sendable {
        let delay: TimeInterval
        let calls = Mutex<[String: Int]>([:])

        init(delay: TimeInterval) { self.delay = delay }

        func callAsFunction(_ host: String) -> [String] {
            calls.withLock { $0[host, default: 0] += 1 }
            Thread.sleep(forTimeInterval: delay)
            return ["93.184.216.34"]
        }

        func count(_ host: String) -> Int { calls.withLock { $0[host, default: 0] } }
    }

    @Test("fifty callers asking for one name at once share one lookup")
    func singleFlight() async throws {
        let lookUp = SlowLookUp(delay: 0.3)
        let resolver = HostResolver(threads: 2, lookUp: { lookUp($0) })
        try await withThrowingTaskGroup(of: [String].self) { group in
            for _ in 0..<50 { group.addTask { try await resolver.addresses(of: "upstream.example") } }
            for try await addresses in group { #expect(addresses == ["93.184.216.34"]) }
        }
        #expect(lookUp.count("upstream.example") == 1)
        #expect(resolver.lookupsInFlight == 0)
        _ = try await resolver.addresses(of: "upstream.example")
        #expect(lookUp.count("upstream.example") == 2, "a finished lookup is not kept: the pool keeps its clients instead")
    }

    @Test("a caller waits at most the deadline for a resolver that hangs; an address is never looked up")
    func deadline() async throws {
        let lookUp = SlowLookUp(delay: 3)
        let resolver = HostResolver(threads: 1, deadline: .milliseconds(200), lookUp: { lookUp($0) })
        let started = ContinuousClock.now
        await #expect(throws: OutboundHTTPClient.Refusal.timedOut(.milliseconds(200))) { _ = try await resolver.addresses(of: "hung.example") }
        #expect(ContinuousClock.now - started < .seconds(2))
        #expect(try await resolver.addresses(of: "10.0.0.1") == ["10.0.0.1"])
        #expect(lookUp.count("10.0.0.1") == 0)
    }

    @Test("past maxLookups names at once, a new name is refused at once; a name already being looked up still waits for it")
    func bounded() async throws {
        let lookUp = SlowLookUp(delay: 1)
        let resolver = HostResolver(threads: 2, deadline: .seconds(5), maxLookups: 2, lookUp: { lookUp($0) })
        async let first = resolver.addresses(of: "a.example")
        async let second = resolver.addresses(of: "b.example")
        try await Task.sleep(for: .milliseconds(200))
        let started = ContinuousClock.now
        await #expect(throws: OutboundHTTPClient.Refusal.unresolvable("c.example")) { _ = try await resolver.addresses(of: "c.example") }
        #expect(ContinuousClock.now - started < .milliseconds(500))
        #expect(try await resolver.addresses(of: "a.example") == ["93.184.216.34"])
        _ = try await (first, second)
        #expect(lookUp.count("c.example") == 0)
    }

    @Test("the system lookup resolves localhost and nothing for a name that cannot exist")
    func systemLookUp() {
        #expect(!HostResolver.systemLookUp("localhost").isEmpty)
        #expect(HostResolver.systemLookUp("no-such-host.invalid").isEmpty)
    }
}

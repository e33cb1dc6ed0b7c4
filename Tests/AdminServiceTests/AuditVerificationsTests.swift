import HTTPTypes
import SesameDomain
import SesameHTTP
import Synchronization
import Testing

@testable import AdminService

/// `audit/verify` keeps at most one walk of an app's chain running, whatever its callers do.
@Suite("Admin: audit verification is bounded", .timeLimit(.minutes(1)))
struct AuditVerificationsTests {
    /// A walk that counts itself and how many run at once, and waits until released.
    final class CountingWalk: Sendable {
        struct Counts {
            var walks: [[UInt8]?] = []
            var running = 0
            var mostAtOnce = 0
        }
        let counts = Mutex(Counts())
        let released = Atomic<Bool>(false)

        func walk(appID: String, expectedHead: [UInt8]?) async throws -> AuditChain.Verifier {
            counts.withLock { counts in
                counts.walks.append(expectedHead)
                counts.running += 1
                counts.mostAtOnce = max(counts.mostAtOnce, counts.running)
            }
            while !released.load(ordering: .relaxed) { try await Task.sleep(for: .milliseconds(5)) }
            counts.withLock { $0.running -= 1 }
            return AuditChain.Verifier(expectedHead: expectedHead)
        }
    }

    @Test("requests arriving during a walk with the same head share it; other heads wait their turn; a finished walk is never reused")
    func oneWalkAtATime() async throws {
        let counting = CountingWalk()
        let verifications = AuditVerifications { try await counting.walk(appID: $0, expectedHead: $1) }
        let heads: [[UInt8]?] = [nil, [1], [2]]
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<30 {
                group.addTask { _ = try await verifications.verify(appID: "A", expectedHead: heads[index % 3]) }
            }
            // Let every request arrive before the first walk ends.
            try await Task.sleep(for: .milliseconds(200))
            counting.released.store(true, ordering: .relaxed)
            try await group.waitForAll()
        }
        let counts = counting.counts.withLock { $0 }
        #expect(counts.mostAtOnce == 1, "walks of one app ran at once: \(counts.mostAtOnce)")
        #expect(counts.walks.count == 3, "one walk per head asked, shared by its requests: \(counts.walks)")
        #expect(Set(counts.walks.map { $0 ?? [] }) == [[], [1], [2]], "each head asked was walked")

        // Finished: the next request walks again (an entry changed since must be caught).
        _ = try await verifications.verify(appID: "A", expectedHead: nil)
        #expect(counting.counts.withLock { $0.walks.count } == counts.walks.count + 1)
    }

    /// What each request got, in the order they ended.
    final class Outcomes: Sendable {
        let list = Mutex<[String]>([])
    }

    @Test("past one running and four waiting walks of an app, a request with yet another head is refused 503 with Retry-After; another app is not")
    func waitingIsBounded() async throws {
        let counting = CountingWalk()
        let verifications = AuditVerifications { try await counting.walk(appID: $0, expectedHead: $1) }
        let outcomes = Outcomes()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<8 {
                group.addTask {
                    do {
                        _ = try await verifications.verify(appID: "A", expectedHead: [UInt8(index)])
                        outcomes.list.withLock { $0.append("walked") }
                    } catch let error as APIError {
                        outcomes.list.withLock { $0.append("\(error.status.code) \(error.code) \(error.headers[.retryAfter] ?? "")") }
                    }
                }
            }
            group.addTask {
                try await Task.sleep(for: .milliseconds(100))
                _ = try await verifications.verify(appID: "B", expectedHead: nil)  // its own walk, not refused
                outcomes.list.withLock { $0.append("other app walked") }
            }
            try await Task.sleep(for: .milliseconds(200))
            counting.released.store(true, ordering: .relaxed)
            try await group.waitForAll()
        }
        let seen = outcomes.list.withLock { $0 }
        #expect(seen.filter { $0 == "walked" }.count == 1 + AuditVerifications.maxWaiting, "\(seen)")
        #expect(seen.filter { $0 == "503 service_unavailable 1" }.count == 8 - 1 - AuditVerifications.maxWaiting, "\(seen)")
        #expect(seen.contains("other app walked"))
    }
}

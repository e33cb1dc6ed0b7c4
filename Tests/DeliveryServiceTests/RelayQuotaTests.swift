@testable import DeliveryService
import Foundation
import Logging
import PostgresNIO
import SesameDomain
import SesameStorage
import SesameTestSupport
import Synchronization
import Testing

/// `RelayQuotas` as two replicas share them through one database, on a clock the test moves.
@Suite("Delivery: relay quotas across replicas", .timeLimit(.minutes(2)))
struct RelayQuotaTests {
    static let logger = Logger(label: "relay-quota-test")

    /// A clock both replicas read, at 10:00:05 UTC on some day.
    final class TestClock: Sendable {
        let seconds = Mutex<TimeInterval>(1_790_000_000 - 1_790_000_000.truncatingRemainder(dividingBy: 86_400) + 36_005)
        var now: Date { Date(timeIntervalSince1970: seconds.withLock { $0 }) }
        func advance(_ by: TimeInterval) { seconds.withLock { $0 += by } }
    }

    /// A migrated database of the test's own, its pool running.
    func withDatabase(_ body: (Database) async throws -> Void) async throws {
        try await TestDatabase.withFreshDatabase { url in
            let database = Database(url: url, logger: Self.logger)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await database.run() }
                defer { group.cancelAll() }
                _ = try await Migrator().migrate(database.client, logger: Self.logger)
                try await body(database)
            }
        }
    }

    func withReplicas(_ body: (RelayQuotas, RelayQuotas, TestClock, Database) async throws -> Void) async throws {
        try await withDatabase { database in
            let clock = TestClock()
            let first = RelayQuotas(database: database, logger: Self.logger, now: { clock.now })
            let second = RelayQuotas(database: database, logger: Self.logger, now: { clock.now })
            try await body(first, second, clock, database)
        }
    }

    static func rules(perInstallPerMinute: Int? = nil, perInstallPerDay: Int? = nil, perAppPerDay: Int? = nil) -> RelayRules {
        RelayRules(
            upstream: "https://api.example.com", methods: ["POST"], paths: ["/**"], perInstallPerMinute: perInstallPerMinute,
            perInstallPerDay: perInstallPerDay, perAppPerDay: perAppPerDay)
    }

    /// Calls until refused (at most `most`); the calls admitted and the refusal.
    static func spend(
        _ quotas: RelayQuotas, subject: String, rules: RelayRules, most: Int
    ) async -> (admitted: Int, refusal: RelayQuotas.Refusal?) {
        for admitted in 0..<most {
            do { try await quotas.spend(appID: "T.app", relay: "llm", subject: subject, rules: rules) } catch { return (admitted, error) }
        }
        return (most, nil)
    }

    @Test("a second replica starts a window from every replica's sum; past a sync both refuse; the overshoot is the other replica's calls since its last sync")
    func acrossReplicas() async throws {
        try await withReplicas { first, second, _, _ in
            let rules = Self.rules(perInstallPerDay: 5)
            #expect(await Self.spend(first, subject: "install-a", rules: rules, most: 3).admitted == 3)
            try await first.sync()
            // The second replica reads the 3 at its first call of the window: 2 more, then refused.
            let onSecond = await Self.spend(second, subject: "install-a", rules: rules, most: 10)
            #expect(onSecond.admitted == 2)
            guard case .exceeded(.installDay, 5, let retryAfter) = onSecond.refusal else {
                Issue.record("refusal: \(String(describing: onSecond.refusal))")
                return
            }
            // 10:00:05 to midnight UTC.
            #expect(retryAfter == 86_400 - 36_005)
            // The first replica has not synced since: within the tolerance, it admits what it has not
            // yet heard of (the second's 2), then the syncs bring both to the sum.
            let beforeSync = await Self.spend(first, subject: "install-a", rules: rules, most: 10)
            #expect(beforeSync.admitted == 2)
            try await second.sync()
            try await first.sync()
            #expect(await Self.spend(first, subject: "install-a", rules: rules, most: 1).admitted == 0)
            #expect(await Self.spend(second, subject: "install-a", rules: rules, most: 1).admitted == 0)
            // Another install has its own window.
            #expect(await Self.spend(second, subject: "install-b", rules: rules, most: 10).admitted == 5)
        }
    }

    @Test("two replicas meeting a new window at once admit no more than its quota between them, before either syncs")
    func newWindowAtOnce() async throws {
        try await withReplicas { first, second, _, database in
            let rules = Self.rules(perInstallPerMinute: 10, perAppPerDay: 800)
            let admitted = await withTaskGroup(of: Int.self) { group in
                for replica in [first, second, first, second] {
                    group.addTask { await Self.spend(replica, subject: "install-a", rules: rules, most: 20).admitted }
                }
                return await group.reduce(0, +)
            }
            // Before reservations each replica admitted the whole quota in its first second: 20.
            #expect(admitted == 10)
            try await first.sync()
            try await second.sync()
            // What was reserved and not used went back: the sums are the calls admitted.
            #expect(try await Self.sums(database) == ["/app_day=10", "install-a/install_minute=10"])
        }
    }

    @Test("a reservation is a share of the quota (an eighth), counted for every replica at once and given back in part at the first sync")
    func reservationShare() async throws {
        try await withReplicas { first, second, _, database in
            let rules = Self.rules(perAppPerDay: 80)
            #expect(await Self.spend(first, subject: "a", rules: rules, most: 3).admitted == 3)
            #expect(try await Self.sums(database) == ["/app_day=10"])
            // The second replica's first share leaves room for the first's.
            #expect(await Self.spend(second, subject: "b", rules: rules, most: 100).admitted == 70)
            try await first.sync()
            try await second.sync()
            #expect(try await Self.sums(database) == ["/app_day=73"])
            // Synced now (the first once more, to hear of the second's share given back): it admits the rest.
            try await first.sync()
            #expect(await Self.spend(first, subject: "a", rules: rules, most: 100).admitted == 7)
        }
    }

    /// `relay_usage`'s sums by subject and kind, as `subject/kind=calls`.
    static func sums(_ database: Database) async throws -> [String] {
        let rows = try await database.client.query(
            "SELECT subject, window_kind, sum(calls)::bigint FROM relay_usage GROUP BY subject, window_kind ORDER BY 1, 2", logger: Self.logger)
        var sums: [String] = []
        for try await (subject, kind, calls) in rows.decode((String, String, Int64).self) { sums.append("\(subject)/\(kind)=\(calls)") }
        return sums
    }

    @Test("per install per minute resets with the minute; the app's daily quota counts every install; a refusal counts nothing")
    func windows() async throws {
        try await withReplicas { first, _, clock, database in
            let rules = Self.rules(perInstallPerMinute: 2, perAppPerDay: 5)
            #expect(await Self.spend(first, subject: "a", rules: rules, most: 5).admitted == 2)
            let refused = await Self.spend(first, subject: "a", rules: rules, most: 1).refusal
            #expect(refused == .exceeded(.installMinute, limit: 2, retryAfter: 55))
            clock.advance(60)
            #expect(await Self.spend(first, subject: "a", rules: rules, most: 5).admitted == 2)
            // 4 of the app's 5 are used; b gets 1, then the app's quota refuses.
            let b = await Self.spend(first, subject: "b", rules: rules, most: 5)
            #expect(b.admitted == 1)
            guard case .exceeded(.appDay, 5, _) = b.refusal else {
                Issue.record("b's refusal: \(String(describing: b.refusal))")
                return
            }
            try await first.sync()
            #expect(try await Self.sums(database) == ["/app_day=5", "a/install_minute=4", "b/install_minute=1"])
            // The first minute's windows ended and were synced: forgotten.
            #expect(first.windowsHeld == 3)
        }
    }

    @Test("past maxWindows a new window is refused, not left uncounted; no quota, nothing held")
    func bounded() async throws {
        try await withDatabase { database in
            let quotas = RelayQuotas(database: database, maxWindows: 4, logger: Self.logger)
            let rules = Self.rules(perInstallPerDay: 100)
            for subject in ["a", "b", "c", "d"] {
                #expect(await Self.spend(quotas, subject: subject, rules: rules, most: 1).admitted == 1)
            }
            #expect(await Self.spend(quotas, subject: "e", rules: rules, most: 1).refusal == .full)
            // Refused before a share of its quota was counted for it.
            let counted = try await database.client.query("SELECT count(*) FROM relay_usage WHERE subject = 'e'", logger: Self.logger)
            for try await rows in counted.decode(Int.self) { #expect(rows == 0) }
            #expect(await Self.spend(quotas, subject: "a", rules: rules, most: 1).admitted == 1)
            #expect(await Self.spend(quotas, subject: "f", rules: Self.rules(), most: 3).admitted == 3)
            #expect(quotas.windowsHeld == 4)
        }
    }
}

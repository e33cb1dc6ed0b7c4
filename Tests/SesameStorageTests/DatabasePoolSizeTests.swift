import Foundation
import Logging
import PostgresNIO
import SesameTestSupport
import Testing

@testable import SesameStorage

/// `SESAME_DATABASE_POOL_SIZE` bounds the connections one instance opens, which is what an
/// operator adds up to size PostgreSQL's `max_connections`.
@Suite("The database pool's size", .timeLimit(.minutes(1)))
struct DatabasePoolSizeTests {
    let logger = Logger(label: "database-pool-size-test")
    /// Each query the test runs, and what it looks for in `pg_stat_activity`.
    static let slowQuery = "SELECT pg_sleep(0.4)"

    @Test("more queries at once than the pool's size wait for a connection instead of opening more")
    func boundsConnections() async throws {
        try await TestDatabase.withFreshDatabase { url in
            let database = Database(url: url, poolSize: 2, logger: logger)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await database.run() }
                defer { group.cancelAll() }
                let finished = try await withThrowingTaskGroup(of: Int.self) { queries in
                    for _ in 0..<6 {
                        queries.addTask {
                            var rows = 0
                            for try await _ in try await database.client.query(PostgresQuery(unsafeSQL: Self.slowQuery)) { rows += 1 }
                            return rows
                        }
                    }
                    var mostAtOnce = 0
                    let clock = ContinuousClock()
                    // A second of watching from the first query seen (a loaded machine may open the pool late).
                    let giveUp = clock.now.advanced(by: .seconds(15))
                    var until = giveUp
                    while clock.now < until {
                        if mostAtOnce == 0 { until = min(giveUp, clock.now.advanced(by: .seconds(1))) }
                        mostAtOnce = max(mostAtOnce, try await TestDatabase.backends(of: url.database, running: Self.slowQuery))
                        try await Task.sleep(for: .milliseconds(50))
                    }
                    #expect(mostAtOnce == 2, "the pool ran \(mostAtOnce) queries at once")
                    return try await queries.reduce(0, +)
                }
                #expect(finished == 6, "every query waited its turn and answered")
            }
        }
    }
}

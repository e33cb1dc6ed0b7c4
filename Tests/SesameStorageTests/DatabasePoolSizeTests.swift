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
                            for try await _ in try await database.client.query("SELECT pg_sleep(0.4)") { rows += 1 }
                            return rows
                        }
                    }
                    var mostAtOnce = 0
                    let clock = ContinuousClock()
                    let until = clock.now.advanced(by: .seconds(1))
                    while clock.now < until {
                        mostAtOnce = max(mostAtOnce, try await Self.sleepingBackends(in: url.database))
                        try await Task.sleep(for: .milliseconds(50))
                    }
                    #expect(mostAtOnce == 2, "the pool ran \(mostAtOnce) queries at once")
                    return try await queries.reduce(0, +)
                }
                #expect(finished == 6, "every query waited its turn and answered")
            }
        }
    }

    /// Backends of `database` running the test's sleep, counted from the server's own database.
    static func sleepingBackends(in database: String) async throws -> Int {
        try await TestDatabase.withClient(try TestDatabase.serverURL()) { client in
            let rows = try await client.query(
                """
                SELECT count(*)::int FROM pg_stat_activity
                WHERE datname = \(database) AND state = 'active' AND query = 'SELECT pg_sleep(0.4)'
                """)
            for try await count in rows.decode(Int.self) { return count }
            return -1
        }
    }
}

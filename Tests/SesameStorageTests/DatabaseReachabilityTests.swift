import Logging
import PostgresNIO
import SesameStorage
import SesameTestSupport
import Testing

@Suite("Database reachability")
struct DatabaseReachabilityTests {
    @Test("a pool whose every connection is busy is slow, not unreachable: the probe has a connection of its own")
    func busyPoolIsReachable() async throws {
        try await TestDatabase.withFreshDatabase { url in
            let database = Database(url: try DatabaseURL(url.connectionString), logger: Logger(label: "reachability-test"))
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await database.run() }
                #expect(await database.isReachable(timeout: .seconds(15)))
                // Every connection of the pool (PostgresNIO's default is 20) held by a slow query.
                for _ in 0..<20 {
                    group.addTask { try await database.client.query("SELECT pg_sleep(3)") }
                }
                try await Task.sleep(for: .milliseconds(700))
                #expect(await database.isReachable(timeout: .seconds(1)))
                group.cancelAll()
            }
        }
    }
}

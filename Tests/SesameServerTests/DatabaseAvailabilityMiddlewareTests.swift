import Foundation
import Hummingbird
import HTTPTypes
import HummingbirdTesting
import Logging
import PostgresNIO
import SesameHTTP
import SesameStorage
import SesameTestSupport
import Testing

@testable import SesameServer

/// A request that stalls or fails while PostgreSQL is away gets 503 `service_unavailable` in
/// seconds; with PostgreSQL up, slow requests and plain failures are left alone.
@Suite("Database availability middleware")
struct DatabaseAvailabilityMiddlewareTests {
    /// A router whose `/stall` never returns until cancelled, `/slow` takes 600 ms, `/fail` throws a
    /// non-HTTP error, and `/memory/stall` stalls on an exempt path.
    static func router(watch: DatabaseStallWatch) -> Router<BasicRequestContext> {
        let router = Router()
        router.addMiddleware {
            ErrorRenderingMiddleware()
            DatabaseAvailabilityMiddleware(watch: watch, exemptPaths: [PathPrefix("/memory")])
        }
        router.get("stall") { _, _ -> String in
            try await Task.sleep(for: .seconds(3600))
            return "never"
        }
        router.get("slow") { _, _ -> String in
            try await Task.sleep(for: .milliseconds(600))
            return "slow"
        }
        router.get("fail") { _, _ -> String in throw Oops() }
        router.get("busy") { _, _ -> String in throw StorageError.busy }
        router.get("memory/stall") { _, _ -> String in
            try await Task.sleep(for: .milliseconds(600))
            return "from memory"
        }
        return router
    }

    struct Oops: Error {}

    /// The database and its stall watch running, and the application on a real socket, as in a service.
    static func withDatabase(
        _ url: DatabaseURL, patience: Duration = .milliseconds(200), connections: TestConnections = .one,
        _ body: @escaping @Sendable (Database, any TestClientProtocol) async throws -> Void
    ) async throws {
        let database = Database(url: url, logger: Logger(label: "test-db"))
        let watch = DatabaseStallWatch(database: database, patience: patience, probeTimeout: .milliseconds(500))
        try await withRunningServices([database, watch]) {
            try await Application(router: Self.router(watch: watch)).test(connections.setup) { client in try await body(database, client) }
        }
    }

    @Test("PostgreSQL unreachable: a stalled request is cut short with 503 and Retry-After; a failed one is 503 too")
    func unreachable() async throws {
        // Port 1 on loopback: nothing listens there.
        try await Self.withDatabase(try DatabaseURL("postgres://sesame@127.0.0.1:1/sesame")) { _, client in
            try await client.execute(uri: "/fail", method: .get) { response in
                #expect(response.status == .serviceUnavailable)
            }
            try await client.execute(uri: "/memory/stall", method: .get) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body) == "from memory")
            }
            let started = ContinuousClock.now
            try await client.execute(uri: "/stall", method: .get) { response in
                #expect(response.status == .serviceUnavailable)
                #expect(response.headers[.retryAfter] == "5")
                #expect(String(buffer: response.body).contains(#""code":"service_unavailable""#))
            }
            // Not the pool's minute of retries (loose: the suite runs in parallel on 2 cores).
            #expect(ContinuousClock.now - started < .seconds(15))
        }
    }

    @Test("PostgreSQL unreachable: many requests stalled at once are each cut short with 503, and the next ones too")
    func manyStalledAtOnce() async throws {
        try await Self.withDatabase(
            try DatabaseURL("postgres://sesame@127.0.0.1:1/sesame"), patience: .milliseconds(40), connections: .many
        ) { _, client in
            for _ in 0..<3 {
                let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                    for _ in 0..<24 {
                        group.addTask { try await client.execute(uri: "/stall", method: .get) { $0.status } }
                    }
                    return try await group.reduce(into: [HTTPResponse.Status]()) { $0.append($1) }
                }
                #expect(statuses.count == 24)
                #expect(statuses.allSatisfy { $0 == .serviceUnavailable })
            }
        }
    }

    @Test("the pool's wait full (busy): 503 with a short Retry-After, whether or not PostgreSQL answers")
    func busyPool() async throws {
        try await Self.withDatabase(try DatabaseURL("postgres://sesame@127.0.0.1:1/sesame")) { _, client in
            try await client.execute(uri: "/busy", method: .get) { response in
                #expect(response.status == .serviceUnavailable)
                #expect(response.headers[.retryAfter] == "1")
                #expect(String(buffer: response.body).contains(#""code":"service_unavailable""#))
            }
        }
    }

    @Test("PostgreSQL reachable: a slow request completes and a failure stays a 500")
    func reachable() async throws {
        try await TestDatabase.withFreshDatabase { url in
            try await Self.withDatabase(url) { database, client in
                // A pool with a connection open, as a running service has: the probe's 1 s is for
                // a round trip, not for connecting to a fresh database on a loaded machine.
                #expect(await database.isReachable(timeout: .seconds(15)))
                try await client.execute(uri: "/slow", method: .get) { response in
                    #expect(response.status == .ok)
                    #expect(String(buffer: response.body) == "slow")
                }
                try await client.execute(uri: "/fail", method: .get) { response in
                    #expect(response.status == .internalServerError)
                }
            }
        }
    }

    @Test("a pool busy with slow queries is not an outage: the probe has a connection of its own")
    func busyPoolIsNotAnOutage() async throws {
        try await TestDatabase.withFreshDatabase { url in
            let database = Database(url: url, logger: Logger(label: "test-db"))
            try await withRunningServices([database]) {
                #expect(await database.isReachable(timeout: .seconds(15)))
                let client = database.client
                try await withThrowingTaskGroup(of: Void.self) { group in
                    // More slow queries than the pool has connections: every one is lent out, the rest queue.
                    // (Short ones: a burst on a pool that has opened one connection so far queues
                    // on that one, so 40 of them run one after another.)
                    for _ in 0..<40 { group.addTask { try await client.query("SELECT pg_sleep(0.3)") } }
                    try await Task.sleep(for: .milliseconds(500))
                    let started = ContinuousClock.now
                    #expect(await database.isReachable(timeout: .seconds(1)))
                    #expect(ContinuousClock.now - started < .seconds(1))
                    try await group.waitForAll()
                }
            }
        }
    }
}

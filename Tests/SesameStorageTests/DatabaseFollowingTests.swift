import Foundation
import Logging
import PostgresNIO
import SesameTestSupport
import Testing

@testable import SesameStorage

/// A database followed through its URL file moves with it: what a failover to a primary at
/// another address looks like to a running service.
@Suite("A followed database URL", .timeLimit(.minutes(2)))
struct DatabaseFollowingTests {
    let logger = Logger(label: "database-following-test")

    static func currentDatabase(_ database: Database) async throws -> String {
        for try await name in try await database.client.query("SELECT current_database()").decode(String.self) { return name }
        throw TestDatabase.Unavailable(description: "no row")
    }

    static func write(_ text: String, to file: String) throws {
        // As an operator or Kubernetes does: a new file renamed over the old one.
        try text.write(toFile: file, atomically: true, encoding: .utf8)
    }

    @Test("new queries go to the URL the file now holds; a query already running finishes where it began; a file that holds no URL is ignored")
    func followsTheFile() async throws {
        try await TestDatabase.withFreshDatabase { first in
            try await TestDatabase.withFreshDatabase { second in
                let file = FileManager.default.temporaryDirectory.appendingPathComponent("sesame-db-url-\(UUID().uuidString)").path
                defer { try? FileManager.default.removeItem(atPath: file) }
                try Self.write(Self.text(first), to: file)
                let database = Database(url: first, following: file, logger: logger)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await database.run() }
                    defer { group.cancelAll() }
                    #expect(try await Self.currentDatabase(database) == first.database)

                    // A slow query on the first pool, then the move.
                    let running = Task {
                        for try await (_, name) in try await database.client.query("SELECT pg_sleep(4), current_database()").decode((String, String).self) {
                            return name
                        }
                        return ""
                    }
                    try await Task.sleep(for: .milliseconds(300))
                    try Self.write(Self.text(second), to: file)
                    try await eventually(timeout: .seconds(15), pollEvery: .milliseconds(200), "the followed database moved") {
                        try await Self.currentDatabase(database) == second.database
                    }
                    #expect(database.url.database == second.database)
                    #expect(try await running.value == first.database, "the query that began before the move was cut off")
                    #expect(await database.isReachable())

                    // Garbage in the file: logged, and the pool stays where it is.
                    try Self.write("not a url", to: file)
                    try await Task.sleep(for: Database.followInterval * 2)
                    #expect(try await Self.currentDatabase(database) == second.database)
                    #expect(await database.isReachable())
                }
            }
        }
    }

    @Test("without a file to follow the pool stays on its URL")
    func staysWithoutAFile() async throws {
        try await TestDatabase.withFreshDatabase { url in
            let database = Database(url: url, logger: logger)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await database.run() }
                defer { group.cancelAll() }
                let name = try await Self.currentDatabase(database)
                #expect(name == url.database)
            }
        }
    }

    /// The URL as a service reads it (DatabaseURL's description hides the password).
    static func text(_ url: DatabaseURL) -> String {
        let password = url.password.map { ":\($0)" } ?? ""
        return "postgres://\(url.username)\(password)@\(url.host):\(url.port)/\(url.database)?sslmode=\(url.sslMode)"
    }
}

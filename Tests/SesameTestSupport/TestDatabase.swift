import Foundation
import Logging
import PostgresNIO
import SesameStorage

/// Gives each integration test its own, freshly created PostgreSQL database on the server the test
/// command started, so tests run in parallel and can be re-run. Never skips: without a server the
/// test fails and says how to run it.
public enum TestDatabase {
    /// The variable the test command sets: a URL of the test server's maintenance database.
    public static let variable = "SESAME_TEST_DATABASE_URL"

    /// Why an integration test could not get a database.
    public struct Unavailable: Error, CustomStringConvertible {
        public let description: String

        public init(description: String) {
            self.description = description
        }
    }

    /// The server URL from the environment, or an error telling how to run the tests.
    public static func serverURL() throws -> DatabaseURL {
        guard let text = ProcessInfo.processInfo.environment[variable], !text.isEmpty else {
            throw Unavailable(
                description: "\(variable) is not set: integration tests need PostgreSQL. Run them with ./sesame-dev test"
            )
        }
        let url = try DatabaseURL(text)
        try TestServiceReachability.require("PostgreSQL", host: url.host, port: url.port, variable: variable)
        return url
    }

    /// Creates an empty database, passes its URL to `body`, and drops it afterwards.
    public static func withFreshDatabase<Result: Sendable>(
        _ body: (DatabaseURL) async throws -> Result
    ) async throws -> Result {
        let server = try serverURL()
        let name = "sesame_test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        try await withClient(server) { client in
            // The name is generated above, never input: safe to splice as an identifier.
            _ = try await client.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"))
        }
        do {
            let result = try await body(server.with(database: name))
            try await drop(name, on: server)
            return result
        } catch {
            try? await drop(name, on: server)
            throw error
        }
    }

    /// Runs `body` with a running client for `url`, shutting the client down afterwards.
    public static func withClient<Result: Sendable>(
        _ url: DatabaseURL,
        _ body: (PostgresClient) async throws -> Result
    ) async throws -> Result {
        let client = PostgresClient(configuration: url.clientConfiguration, backgroundLogger: Logger(label: "test-db"))
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            return try await body(client)
        }
    }

    private static func drop(_ name: String, on server: DatabaseURL) async throws {
        try await withClient(server) { client in
            _ = try await client.query(PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(name) WITH (FORCE)"))
        }
    }
}

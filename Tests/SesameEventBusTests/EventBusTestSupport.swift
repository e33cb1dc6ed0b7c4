import Foundation
import Logging
import PostgresNIO
import SesameEventBus
import SesameEvents
import SesameKafka
import SesameStorage
import SesameTestSupport

let testLogger: Logger = {
    var logger = Logger(label: "sesame-eventbus-test")
    logger.logLevel = .warning
    return logger
}()

/// A migrated database of the test's own, with a pool running as `database`.
func withMigratedDatabase<Result: Sendable>(_ body: (Database) async throws -> Result) async throws -> Result {
    try await TestDatabase.withFreshDatabase { url in
        let database = Database(url: url, logger: testLogger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await database.run() }
            defer { group.cancelAll() }
            _ = try await Migrator().migrate(database.client, logger: testLogger)
            try await database.client.query("CREATE TABLE test_state (id BIGSERIAL PRIMARY KEY, revision BIGINT NOT NULL)", logger: testLogger)
            return try await body(database)
        }
    }
}

/// A state change and its event, committed together the way services do it.
func commitStateChange(revision: Int64, appID: String, on database: Database) async throws -> EventEnvelope {
    let envelope = EventEnvelope(appID: appID, event: .appChanged)
    try await database.client.withTransaction(logger: testLogger) { connection in
        try await connection.query("INSERT INTO test_state (revision) VALUES (\(revision))", logger: testLogger)
        try await Outbox.append(envelope, on: connection, logger: testLogger)
    }
    return envelope
}

/// Outbox rows not yet published.
func unpublishedCount(_ database: Database) async throws -> Int {
    let rows = try await database.client.query("SELECT count(*) FROM outbox WHERE published_at IS NULL", logger: testLogger)
    var count = 0
    for try await value in rows.decode(Int.self) { count = value }
    return count
}

/// A test app id no other test uses; consumers filter the shared topics by it.
func uniqueAppID() -> String {
    "TEAMID.com.example.\(UUID().uuidString.prefix(8).lowercased())"
}

/// Relay timings that keep tests quick.
let fastRelay = OutboxRelayConfiguration(
    batchSize: 100, pollInterval: .milliseconds(20), retryBackoff: .milliseconds(100), maxRetryBackoff: .milliseconds(500),
    topicPartitions: 3)

/// Reads events from `stream` until `predicate` says enough, or fails after `timeout`.
func collectEvents(
    from stream: EventStream, timeout: Duration = .seconds(30), until done: @escaping @Sendable ([EventEnvelope]) -> Bool
) async throws -> [EventEnvelope] {
    try await collect(from: stream, timeout: timeout, what: "events", until: done)
}

import Foundation
import PostgresNIO
import SesameEventBus
import SesameEvents
import SesameStorage
import Testing

/// "App X changed" has one source: the database trigger on what delivery serves, which appends
/// the `app.changed` event to the outbox in the changing transaction (migration 13).
@Suite("app.changed from the database", .timeLimit(.minutes(2)))
struct AppChangeEventTests {
    @Test("a transaction that changes what an app serves appends one app.changed for it, in the EventCodec layout")
    func oneEventPerAppAndTransaction() async throws {
        try await withMigratedDatabase { database in
            let first = uniqueAppID(), second = uniqueAppID()
            let baseline = try await outboxEvents(database).count
            try await database.client.withTransaction(logger: testLogger) { connection in
                for (index, app) in [first, second].enumerated() {
                    try await connection.query(
                        "INSERT INTO apps (app_id, team_id, bundle_id, storage_id) VALUES (\(app), \(app), \(app), \(Data([UInt8(index)])))",
                        logger: testLogger)
                }
                // Two more changes to the first app in the same transaction: still one event for it.
                try await connection.query(
                    "INSERT INTO kill_switches (app_id, version, reason) VALUES (\(first), '2.1.3', 'crash'), (\(first), '2.1.4', 'crash')",
                    logger: testLogger)
            }
            var events = try await outboxEvents(database).dropFirst(baseline)
            #expect(events.map(\.topic) == [EventTopic.configChanges, EventTopic.configChanges])
            #expect(events.map(\.key) == [first, second])
            #expect(events.map(\.envelope.event) == [.appChanged, .appChanged])
            #expect(events.map(\.envelope.appID) == [first, second])
            #expect(Set(events.map(\.envelope.id)).count == 2)
            #expect(events.allSatisfy { abs($0.envelope.occurredAt.timeIntervalSinceNow) < 60 })

            // A later transaction is a later event; one that touches nothing delivery serves is none.
            try await database.client.query("DELETE FROM kill_switches WHERE app_id = \(first) AND version = '2.1.3'", logger: testLogger)
            try await database.client.query("UPDATE apps SET created_at = now() WHERE app_id = \(second)", logger: testLogger)
            events = try await outboxEvents(database).dropFirst(baseline + 2)
            #expect(events.map(\.key) == [first])
        }
    }

    private func outboxEvents(_ database: Database) async throws -> [(topic: String, key: String, envelope: EventEnvelope)] {
        let rows = try await database.client.query("SELECT topic, event_key, payload FROM outbox ORDER BY id", logger: testLogger)
        var events: [(topic: String, key: String, envelope: EventEnvelope)] = []
        for try await (topic, key, payload) in rows.decode((String, String, ByteBuffer).self) {
            events.append((topic, key, try EventCodec.decode(Array(buffer: payload))))
        }
        return events
    }
}

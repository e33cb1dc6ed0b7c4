import Foundation
import HTTPTypes
import PostgresNIO
import SesameTestSupport
import Testing

/// The periodic resync reads what changed since its last read, from PostgreSQL alone: what it
/// must not miss is a write that sent no event, least of all one whose transaction commits late.
@Suite("Delivery: the resync reads what changed since its watermark", .timeLimit(.minutes(2)))
struct ResyncTests {
    static let appID = "\(DeliveryHarness.teamID).\(DeliveryHarness.bundleID)"
    static let otherAppID = "\(DeliveryHarness.teamID).com.example.other"

    @Test("a write with no event is served after the next resync; so is one whose transaction began before a resync and committed after it")
    func writesWithoutEvents() async throws {
        try await DeliveryHarness.run(resyncInterval: .seconds(1)) { harness in
            let revision = try await harness.upload(["flag": true], version: "*")
            let token = try await harness.app.attest(with: harness.auth, appVersion: "1.0.0").accessToken
            try await harness.waitUntilServed(version: "1.0.0", revision: revision, token: token)

            // Straight into PostgreSQL with its event taken back before it commits, as a restore
            // would write it: only the resync can find it.
            try await harness.database.withTransaction(logger: Logger(label: "test")) { connection in
                try await connection.query(
                    "INSERT INTO kill_switches (app_id, version, reason) VALUES (\(Self.appID), '1.0.0', 'written behind the services')",
                    logger: Logger(label: "test"))
                try await Self.withdrawEvents(on: connection)
            }
            try await eventually(timeout: .seconds(10), "both instances apply the kill switch") {
                try await [0, 1].asyncAllSatisfy { try await harness.fetch(version: "1.0.0", token: token, instance: $0).errorCode == "version_disabled" }
            }

            // A transaction that takes an id, waits while several resyncs run, then commits: its
            // change carries an id older than what those resyncs saw committed.
            let laterToken = try await harness.app.attest(with: harness.auth, appVersion: "1.1.0").accessToken
            #expect(try await harness.fetch(version: "1.1.0", token: laterToken).status == .ok)
            _ = try await harness.createApp(bundleID: "com.example.other")
            try await harness.database.withTransaction(logger: Logger(label: "test")) { connection in
                try await connection.query(
                    "INSERT INTO kill_switches (app_id, version, reason) VALUES (\(Self.appID), '1.1.0', 'committed late')", logger: Logger(label: "test"))
                try await Self.withdrawEvents(on: connection)
                // Meanwhile another app's change commits and is read: the watermark must not pass the open transaction.
                try await harness.database.query(
                    "INSERT INTO kill_switches (app_id, version, reason) VALUES (\(Self.otherAppID), '9.9.9', 'committed meanwhile')")
                try await Task.sleep(for: .seconds(3))
            }
            try await eventually(timeout: .seconds(10), "both instances apply the late kill switch") {
                try await [0, 1].asyncAllSatisfy { try await harness.fetch(version: "1.1.0", token: laterToken, instance: $0).errorCode == "version_disabled" }
            }
        }
    }

    /// Deletes the test app's events this transaction appended (the trigger writes one per change).
    static func withdrawEvents(on connection: PostgresConnection) async throws {
        try await connection.query(
            "DELETE FROM outbox WHERE event_key = \(appID) AND published_at IS NULL AND xmin = pg_current_xact_id()::xid",
            logger: Logger(label: "test"))
    }
}

extension Array where Element: Sendable {
    func asyncAllSatisfy(_ predicate: (Element) async throws -> Bool) async rethrows -> Bool {
        for element in self where try await !predicate(element) { return false }
        return true
    }
}

import Foundation
import PostgresNIO
import SesameTestSupport
import Testing

@testable import SesameStorage

/// A slow statement or a forgotten transaction must not hold a service's pooled connection and its
/// locks for long: every connection a service opens carries PostgreSQL's own limits.
@Suite("Database: every connection has a statement limit and an idle-transaction limit")
struct SessionLimitTests {
    @Test("a service's connection reports statement_timeout 30s and idle_in_transaction_session_timeout 1min")
    func limitsAreSet() async throws {
        try await TestDatabase.withFreshDatabase { url in
            try await TestDatabase.withClient(url) { client in
                let rows = try await client.query("SELECT current_setting('statement_timeout'), current_setting('idle_in_transaction_session_timeout')")
                var settings: [(String, String)] = []
                for try await row in rows.decode((String, String).self) { settings.append(row) }
                #expect(settings.first?.0 == "30s" && settings.first?.1 == "1min", "\(settings)")

            }
        }
    }
}

import Logging
import PostgresNIO
import SesameTestSupport
import Testing

@testable import SesameStorage

/// Canaries for the dependency defects Sesame works around (`docs/upstream/`): each test passes
/// while the defect is there, and fails, naming the workaround to delete, once a dependency update
/// fixes it.
@Suite("Upstream defects still present", .timeLimit(.minutes(1)))
struct UpstreamDefectTests {
    let logger = Logger(label: "upstream-defect-test")

    @Test("PostgresNIO: a query on a connection that has closed is never answered (docs/upstream/postgresnio-write-without-promise.md)")
    func queryOnClosedConnectionIsNeverAnswered() async throws {
        try await TestDatabase.withClient(try TestDatabase.serverURL()) { client in
            try await client.withConnection { connection in
                try await connection.close()
                do {
                    _ = try await AbandonableOperation.run({ try await connection.query("SELECT 1", logger: logger) }, limit: .seconds(2))
                    Issue.record("a closed connection answered a query: PostgresNIO no longer loses it; see docs/upstream/postgresnio-write-without-promise.md")
                } catch is TimeoutError {
                    // The defect: the query waits for ever. AbandonableOperation is still needed.
                } catch {
                    Issue.record(
                        "a query on a closed connection failed at once (\(error)): PostgresNIO fixed the defect; delete what docs/upstream/postgresnio-write-without-promise.md lists")
                }
            }
        }
    }
}

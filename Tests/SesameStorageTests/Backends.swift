import PostgresNIO
import SesameTestSupport

extension TestDatabase {
    /// Backends connected to `database`, counted from the server's own database: all of them, or,
    /// given `query`, only those running that exact text now.
    static func backends(of database: String, running query: String? = nil) async throws -> Int {
        try await withClient(try serverURL()) { client in
            let rows = try await client.query(
                """
                SELECT count(*)::int FROM pg_stat_activity
                WHERE datname = \(database) AND (\(query)::text IS NULL OR (state = 'active' AND query = \(query)))
                """)
            for try await count in rows.decode(Int.self) { return count }
            return -1
        }
    }
}

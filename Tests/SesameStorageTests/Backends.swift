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

    /// The backends connected to `database` (process id, the last statement each ran), read
    /// from the server's own database.
    static func backendStatements(of database: String) async throws -> [(pid: Int, query: String)] {
        try await withClient(try serverURL()) { client in
            let rows = try await client.query("SELECT pid, query FROM pg_stat_activity WHERE datname = \(database) ORDER BY pid")
            var backends: [(pid: Int, query: String)] = []
            for try await (pid, query) in rows.decode((Int32, String).self) { backends.append((Int(pid), query)) }
            return backends
        }
    }

    /// Ends the backend `pid`, as a PostgreSQL restart or a dropped connection would.
    static func terminate(backend pid: Int) async throws {
        try await withClient(try serverURL()) { client in
            _ = try await client.query("SELECT pg_terminate_backend(\(Int32(pid)))")
        }
    }
}

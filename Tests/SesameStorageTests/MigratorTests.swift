import Logging
import PostgresNIO
import SesameTestSupport
import Testing

@testable import SesameStorage

@Suite("Migrations against a real PostgreSQL")
struct MigratorTests {
    let logger = Logger(label: "migrator-test")

    @Test("a fresh database gets every table of the schema, and a second run changes nothing")
    func migratesOnce() async throws {
        try await TestDatabase.withFreshDatabase { url in
            try await TestDatabase.withClient(url) { client in
                let first = try await Migrator().migrate(client, logger: logger)
                #expect(first == Migrations.all.map(\.version))
                let second = try await Migrator().migrate(client, logger: logger)
                #expect(second.isEmpty)

                var tables: Set<String> = []
                for try await name in try await client.query(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
                ).decode(String.self) {
                    tables.insert(name)
                }
                let expected: Set<String> = [
                    "schema_migrations", "apps", "provisioning_keys", "config_revisions", "challenges", "attested_keys",
                    "refresh_token_families", "signing_keys", "kill_switches", "revocations", "blobs", "blob_chunks", "user_data",
                    "outbox", "audit_log",
                ]
                #expect(expected.isSubset(of: tables), "missing: \(expected.subtracting(tables))")
            }
        }
    }

    @Test("three services starting at the same moment against an empty database migrate it exactly once")
    func concurrentStartMigratesOnce() async throws {
        try await TestDatabase.withFreshDatabase { url in
            // Three separate pools, as three processes would have.
            let results = try await withThrowingTaskGroup(of: [Int].self) { group in
                for _ in 0..<3 {
                    group.addTask {
                        try await TestDatabase.withClient(url) { client in
                            try await Migrator().migrate(client, logger: logger)
                        }
                    }
                }
                return try await group.reduce(into: [[Int]]()) { $0.append($1) }
            }
            #expect(results.filter { !$0.isEmpty }.count == 1)
            #expect(results.first { !$0.isEmpty } == Migrations.all.map(\.version))
            try await TestDatabase.withClient(url) { client in
                let rows = try await client.query("SELECT count(*) FROM schema_migrations").decode(Int.self)
                var count = 0
                for try await value in rows { count = value }
                #expect(count == Migrations.all.count)
            }
        }
    }

    @Test("an edited released migration is refused instead of silently diverging")
    func editedMigrationIsRefused() async throws {
        try await TestDatabase.withFreshDatabase { url in
            try await TestDatabase.withClient(url) { client in
                let original = Migration(version: 1, name: "t", statements: ["CREATE TABLE t (a INT)"])
                try await Migrator(migrations: [original]).migrate(client, logger: logger)
                let edited = Migration(version: 1, name: "t", statements: ["CREATE TABLE t (a BIGINT)"])
                await #expect(throws: StorageError.migrationChanged(version: 1, name: "t")) {
                    try await Migrator(migrations: [edited]).migrate(client, logger: logger)
                }
            }
        }
    }

    @Test("a database migrated by a newer build is refused")
    func newerDatabaseIsRefused() async throws {
        try await TestDatabase.withFreshDatabase { url in
            try await TestDatabase.withClient(url) { client in
                let one = Migration(version: 1, name: "a", statements: ["CREATE TABLE a (x INT)"])
                let two = Migration(version: 2, name: "b", statements: ["CREATE TABLE b (x INT)"])
                try await Migrator(migrations: [one, two]).migrate(client, logger: logger)
                await #expect(throws: StorageError.databaseNewerThanBuild(appliedVersion: 2, knownVersion: 1)) {
                    try await Migrator(migrations: [one]).migrate(client, logger: logger)
                }
            }
        }
    }

    @Test("a failing migration leaves nothing behind")
    func failedMigrationRollsBack() async throws {
        try await TestDatabase.withFreshDatabase { url in
            try await TestDatabase.withClient(url) { client in
                let broken = Migration(version: 1, name: "broken", statements: ["CREATE TABLE half (x INT)", "NOT SQL"])
                await #expect(throws: (any Error).self) { try await Migrator(migrations: [broken]).migrate(client, logger: logger) }
                let rows = try await client.query("SELECT count(*) FROM information_schema.tables WHERE table_name = 'half'")
                var count = -1
                for try await value in rows.decode(Int.self) { count = value }
                #expect(count == 0)
            }
        }
    }

    @Test("the audit log refuses updates and deletes")
    func auditLogIsAppendOnly() async throws {
        try await TestDatabase.withFreshDatabase { url in
            try await TestDatabase.withClient(url) { client in
                try await Migrator().migrate(client, logger: logger)
                try await client.query("INSERT INTO audit_log (app_id, actor, action) VALUES ('T.app', 'operator', 'test')")
                await #expect(throws: PSQLError.self) { try await client.query("UPDATE audit_log SET action = 'forged'") }
                await #expect(throws: PSQLError.self) { try await client.query("DELETE FROM audit_log") }
            }
        }
    }
}

import Logging
import PostgresNIO

/// Applies `Migrations.all` exactly once per database, even when several services start at once.
///
/// Everything runs in one transaction that first takes a transaction-level advisory lock: a second
/// migrator waits for the first to commit, then finds nothing left to do. A failure rolls back
/// every migration of that run.
public struct Migrator: Sendable {
    /// The advisory lock key all Sesame migrators agree on ("sesame" as a number).
    static let advisoryLockKey: Int64 = 0x7365_7361_6d65

    /// The migrations this migrator knows.
    public let migrations: [Migration]

    /// Creates a migrator for `migrations` (all of Sesame's by default).
    public init(migrations: [Migration] = Migrations.all) {
        self.migrations = migrations
    }

    /// Applies what is missing and returns the versions this call applied (empty when up to date).
    @discardableResult
    public func migrate(_ client: some PostgresConnectionSource, logger: Logger) async throws -> [Int] {
        do {
            return try await apply(migrations, on: client, logger: logger)
        } catch let error as PostgresTransactionError {
            // Surface our own schema errors as they are, not wrapped in the transaction's error.
            if let storageError = error.closureError as? StorageError { throw storageError }
            throw error
        }
    }

    private func apply(_ migrations: [Migration], on client: some PostgresConnectionSource, logger: Logger) async throws -> [Int] {
        try await client.withTransaction(logger: logger) { connection in
            // A migration may rewrite a large table: the services' 30 s statement limit is not for it.
            try await connection.query("SET LOCAL statement_timeout = 0", logger: logger)
            try await connection.query("SELECT pg_advisory_xact_lock(\(Self.advisoryLockKey))", logger: logger)
            try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    version     INTEGER PRIMARY KEY,
                    name        TEXT NOT NULL,
                    checksum    TEXT NOT NULL,
                    applied_at  TIMESTAMPTZ NOT NULL DEFAULT now()
                )
                """,
                logger: logger
            )
            var applied: [Int: String] = [:]
            for try await (version, checksum) in try await connection.query(
                "SELECT version, checksum FROM schema_migrations", logger: logger
            ).decode((Int, String).self) {
                applied[version] = checksum
            }
            let known = migrations.map(\.version).max() ?? 0
            if let newest = applied.keys.max(), newest > known {
                throw StorageError.databaseNewerThanBuild(appliedVersion: newest, knownVersion: known)
            }

            var appliedNow: [Int] = []
            for migration in migrations.sorted(by: { $0.version < $1.version }) {
                if let checksum = applied[migration.version] {
                    guard checksum == migration.checksum else {
                        throw StorageError.migrationChanged(version: migration.version, name: migration.name)
                    }
                    continue
                }
                for statement in migration.statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query(
                    """
                    INSERT INTO schema_migrations (version, name, checksum)
                    VALUES (\(migration.version), \(migration.name), \(migration.checksum))
                    """,
                    logger: logger
                )
                logger.info("applied migration", metadata: ["version": "\(migration.version)", "name": "\(migration.name)"])
                appliedNow.append(migration.version)
            }
            return appliedNow
        }
    }
}

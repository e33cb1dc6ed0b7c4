import Logging
import ServiceLifecycle
import SesameStorage
import Synchronization

/// Migrates the database once PostgreSQL answers, retrying while it does not, so the HTTP server
/// can serve `/health/live` from the first second and `/health/ready` says when it is usable.
///
/// A schema problem (an edited migration, a database newer than this build) is fatal: the error
/// ends the service group and the process exits with it in the log.
public final class MigrationService: Service {
    private let database: Database
    private let logger: Logger
    private let retryInterval: Duration
    private let attemptTimeout: Duration = .seconds(10)
    private let completed = Atomic<Bool>(false)

    /// Creates the service for `database`.
    public init(database: Database, logger: Logger, retryInterval: Duration = .seconds(1)) {
        self.database = database
        self.logger = logger
        self.retryInterval = retryInterval
    }

    /// Whether every migration has been applied.
    public var isComplete: Bool { completed.load(ordering: .acquiring) }

    /// Returns once every migration has been applied (or throws when cancelled first).
    public func waitUntilComplete() async throws {
        while !isComplete { try await Task.sleep(for: .milliseconds(100)) }
    }

    public func run() async throws {
        do {
            try await cancelWhenGracefulShutdown { try await self.migrateWhenReachable() }
        } catch is CancellationError {
            return  // shutting down before PostgreSQL ever answered
        }
        // A service must not return before shutdown, or the group would stop.
        try? await gracefulShutdown()
    }

    private func migrateWhenReachable() async throws {
        let client = database.client
        let logger = self.logger
        var attempt = 1
        while !Task.isCancelled {
            do {
                _ = try await withTimeout(attemptTimeout) { try await Migrator().migrate(client, logger: logger) }
                completed.store(true, ordering: .releasing)
                break
            } catch let error as StorageError {
                logger.critical("database schema problem", metadata: ["error": "\(String(reflecting: error))"])
                throw error
            } catch {
                if attempt == 1 || attempt % 30 == 0 {
                    logger.warning(
                        "PostgreSQL not reachable; will migrate when it is",
                        metadata: ["attempt": "\(attempt)", "database": "\(database.url)"]
                    )
                }
                attempt += 1
                try await Task.sleep(for: retryInterval)
            }
        }
    }
}

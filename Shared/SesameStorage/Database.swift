import Logging
import PostgresNIO
import ServiceLifecycle

/// The PostgreSQL connection pool a service uses, run as a `Service` in the service group.
public struct Database: Service {
    /// The PostgresNIO client; queries go through it with `PostgresQuery` interpolation only.
    public let client: PostgresClient
    /// Where the database is (without password), for log lines.
    public let url: DatabaseURL
    /// The reachability probe, on a connection of its own.
    public let probe: DatabaseProbe

    /// Creates a pool for `url`; it connects once `run()` is running.
    public init(url: DatabaseURL, logger: Logger) {
        self.url = url
        // The pool logs every failed connection attempt at info; during an outage that is a line a
        // second per service. Readiness reports the outage; keep the pool's own logs to warnings.
        var poolLogger = logger
        poolLogger.logLevel = max(logger.logLevel, .warning)
        self.client = PostgresClient(configuration: url.clientConfiguration, backgroundLogger: poolLogger)
        self.probe = DatabaseProbe(url: url, logger: poolLogger)
    }

    /// Runs the pool until graceful shutdown.
    public func run() async throws {
        await cancelWhenGracefulShutdown {
            await client.run()
        }
        await probe.close()
    }

    /// Whether PostgreSQL answers `SELECT 1` within `timeout`, asked on the probe's own connection
    /// (a pool busy with queries is not an outage).
    public func isReachable(timeout: Duration = .seconds(2)) async -> Bool {
        await probe.isReachable(timeout: timeout)
    }
}

extension PostgresClient {
    /// `withTransaction`, rethrowing the closure's own error once the transaction is rolled back
    /// instead of PostgresNIO's wrapper: a refusal thrown inside (a conflict, a missing row)
    /// reaches the caller, and the client, as itself rather than as an internal error.
    public func withRefusingTransaction<Result>(
        logger: Logger, isolation: isolated (any Actor)? = #isolation, _ closure: (PostgresConnection) async throws -> sending Result
    ) async throws -> sending Result {
        do {
            return try await withTransaction(logger: logger, isolation: isolation, closure)
        } catch let error as PostgresTransactionError {
            if error.rollbackError == nil, error.beginError == nil, let closureError = error.closureError { throw closureError }
            throw error
        }
    }
}

import Logging
import PostgresNIO
import ServiceLifecycle

/// The PostgreSQL connection pool a service uses, run as a `Service` in the service group.
public struct Database: Service {
    /// The PostgresNIO client; queries go through it with `PostgresQuery` interpolation only.
    public let client: PostgresClient
    /// Where the database is (without password), for log lines.
    public let url: DatabaseURL
    /// One connection of its own for `isReachable`: a pool whose connections are all busy (long
    /// transactions, lock waits) is slow, not unreachable, and must not be reported as down.
    private let probe: PostgresClient

    /// Creates a pool for `url`; it connects once `run()` is running.
    public init(url: DatabaseURL, logger: Logger) {
        self.url = url
        // The pool logs every failed connection attempt at info; during an outage that is a line a
        // second per service. Readiness reports the outage; keep the pool's own logs to warnings.
        var poolLogger = logger
        poolLogger.logLevel = max(logger.logLevel, .warning)
        self.client = PostgresClient(configuration: url.clientConfiguration, backgroundLogger: poolLogger)
        var probeConfiguration = url.clientConfiguration
        probeConfiguration.options.minimumConnections = 0
        probeConfiguration.options.maximumConnections = 1
        self.probe = PostgresClient(configuration: probeConfiguration, backgroundLogger: poolLogger)
    }

    /// Runs the pool (and the probe's connection) until graceful shutdown.
    public func run() async throws {
        let (client, probe) = (client, probe)
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                group.addTask { await client.run() }
                group.addTask { await probe.run() }
            }
        }
    }

    /// Whether PostgreSQL answers `SELECT 1` within `timeout`, asked on a connection of its own.
    public func isReachable(timeout: Duration = .seconds(2)) async -> Bool {
        let probe = self.probe
        return (try? await withTimeout(timeout) { try await probe.query("SELECT 1") }) != nil
    }
}

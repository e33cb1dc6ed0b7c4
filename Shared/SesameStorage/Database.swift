import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import SesameConfiguration
import Synchronization

/// The PostgreSQL connection pool a service uses, run as a `Service` in the service group.
///
/// Given a file to follow (`SESAME_DATABASE_URL_FILE`), it reads the file every few seconds and,
/// when the URL in it changes (a failover to a primary at another address or port), opens a pool
/// to the new address and sends every new query there; the old pool is closed once the queries
/// already on it have had time to finish, or at once when the old address no longer answers. A
/// file that does not hold a valid URL is logged and ignored: the pool stays where it is.
public struct Database: Service {
    /// One pool and its probe, for one address.
    final class Pool: Sendable {
        let connections: SingleConnectionPools
        let url: DatabaseURL
        let probe: DatabaseProbe
        /// Finished when the pool is retired (its run ends).
        let retirement: AsyncStream<Void>
        let retire: AsyncStream<Void>.Continuation

        /// Up to `size` connections, one open at start, each swept every `sweepInterval`.
        init(url: DatabaseURL, size: Int, sweepInterval: Duration, logger: Logger) {
            self.url = url
            connections = SingleConnectionPools(
                configuration: url.clientConfiguration, size: size, sweepInterval: sweepInterval, logger: logger)
            probe = DatabaseProbe(url: url, logger: logger)
            (retirement, retire) = AsyncStream.makeStream()
        }

        /// Runs the pool until it is retired or the task is cancelled.
        func run() async {
            await withDiscardingTaskGroup { group in
                group.addTask { await self.connections.run() }
                for await _ in retirement {}  // ends when retired, or at once when cancelled
                group.cancelAll()
            }
            await probe.close()
        }
    }

    /// The pool new queries go to (a class: the struct is copied into the service group).
    private final class Current: Sendable {
        let pool: Mutex<Pool>
        init(_ pool: Pool) { self.pool = Mutex(pool) }
    }

    private let current: Current
    private let urlFile: String?
    private let poolSize: Int
    private let sweepInterval: Duration
    private let logger: Logger
    private let poolLogger: Logger

    /// How often the followed file is read.
    static let followInterval: Duration = .seconds(2)
    /// How long a retired pool keeps running, for the queries already on it.
    static let retiredPoolDrain: Duration = .seconds(30)
    /// How often each connection runs a statement when nothing else uses it (PostgresNIO's own
    /// keep-alive's default), well under the minutes after which middleboxes forget a connection.
    public static let sweepInterval: Duration = .seconds(30)

    /// The client of the current address; queries go through it with `PostgresQuery` interpolation
    /// only. Read it for each query (a followed database may have moved).
    public var client: DatabaseClient { DatabaseClient(pools: current.pool.withLock { $0.connections }) }
    /// Where the database is now (without password), for log lines.
    public var url: DatabaseURL { current.pool.withLock { $0.url } }

    /// Creates a pool for `url`; it connects once `run()` is running. With `urlFile`, the pool
    /// follows the URL that file holds (`url` is the one it held at start). The pool opens up to
    /// `poolSize` connections (`SESAME_DATABASE_POOL_SIZE`), one at start, more as queries need
    /// them, and keeps those it opened; so does the pool after a move. Every `sweepInterval` (a
    /// test's is shorter) a short statement runs on each open connection.
    public init(
        url: DatabaseURL, following urlFile: String? = nil, poolSize: Int = ServiceConfiguration.defaultDatabasePoolSize,
        sweepInterval: Duration = Database.sweepInterval, logger: Logger
    ) {
        // The pool logs every failed connection attempt at info; during an outage that is a line a
        // second per service. Readiness reports the outage; keep the pool's own logs to warnings.
        var poolLogger = logger
        poolLogger.logLevel = max(logger.logLevel, .warning)
        self.current = Current(Pool(url: url, size: poolSize, sweepInterval: sweepInterval, logger: poolLogger))
        self.urlFile = urlFile
        self.poolSize = poolSize
        self.sweepInterval = sweepInterval
        self.logger = logger
        self.poolLogger = poolLogger
    }

    /// Runs the pool (and the one after it, when the followed URL changes) until graceful shutdown.
    public func run() async throws {
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                let first = current.pool.withLock { $0 }
                group.addTask { await first.run() }
                guard let urlFile else { return }
                var followed = Self.read(urlFile)
                while (try? await Task.sleep(for: Self.followInterval)) != nil {
                    let text = Self.read(urlFile)
                    guard let text, text != followed else { continue }
                    followed = text
                    guard let url = try? DatabaseURL(text) else {
                        logger.error("the database URL file does not hold a valid URL: staying where the pool is",
                            metadata: ["file": "\(urlFile)", "database": "\(self.url)"])
                        continue
                    }
                    let next = Pool(url: url, size: poolSize, sweepInterval: sweepInterval, logger: poolLogger)
                    group.addTask { await next.run() }
                    let previous = current.pool.withLock { current in
                        defer { current = next }
                        return current
                    }
                    logger.notice("the database moved: new queries go to the new address",
                        metadata: ["from": "\(previous.url)", "to": "\(url)"])
                    group.addTask {
                        // A dead address has nothing to drain, and what waits on it would wait for
                        // it to come back (an outbox relay, a resync): retired at once, they fail
                        // and try again at the new one.
                        if await previous.probe.isReachable(timeout: .seconds(1)) {
                            try? await Task.sleep(for: Self.retiredPoolDrain)
                        }
                        previous.retire.finish()
                    }
                }
            }
        }
    }

    /// The file's text, trimmed; nil when it cannot be read.
    static func read(_ file: String) -> String? {
        (try? String(contentsOfFile: file, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Whether PostgreSQL answers `SELECT 1` within `timeout`, asked on the probe's own connection
    /// (a pool busy with queries is not an outage).
    public func isReachable(timeout: Duration = .seconds(2)) async -> Bool {
        await current.pool.withLock { $0.probe }.isReachable(timeout: timeout)
    }
}

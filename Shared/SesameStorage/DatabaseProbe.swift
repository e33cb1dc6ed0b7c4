import Logging
import PostgresNIO

/// Answers whether PostgreSQL is reachable over a connection of its own, outside the pool: a busy
/// pool (every connection lent out, queries queued) is not an outage, and a probe that waited its
/// turn in the pool's queue read it as one and answered 503 for requests PostgreSQL would serve.
/// Probes made while one is under way share it; the connection is kept between probes and made
/// again after a failure, until the probe is closed.
public actor DatabaseProbe {
    private let url: DatabaseURL
    private let logger: Logger
    private var connection: PostgresConnection?
    private var inFlight: Task<Bool, Never>?
    private var nextConnectionID = 0
    /// Set by `close()`: no connection is made after it, and one being made when it came is
    /// closed as soon as it is open (a retired pool's probe must not keep a connection to the old address).
    private var isClosed = false

    init(url: DatabaseURL, logger: Logger) {
        self.url = url
        self.logger = logger
    }

    /// Whether PostgreSQL answers `SELECT 1` within `timeout`.
    public func isReachable(timeout: Duration) async -> Bool {
        if let inFlight { return await inFlight.value }
        let probe = Task { await self.probe(timeout: timeout) }
        inFlight = probe
        return await probe.value
    }

    /// Closes the probe's connection for good (at shutdown, or when its pool is retired); later
    /// probes answer false.
    public func close() async {
        isClosed = true
        await dropConnection()
    }

    private func dropConnection() async {
        try? await connection?.close()
        connection = nil
    }

    private func probe(timeout: Duration) async -> Bool {
        // Cleared on the actor before any waiter resumes: the next probe starts anew.
        defer { inFlight = nil }
        let logger = logger
        do {
            let connection = try await withTimeout(timeout) { try await self.openConnection() }
            _ = try await withTimeout(timeout) { try await connection.query("SELECT 1", logger: logger) }
            return true
        } catch {
            await dropConnection()
            return false
        }
    }

    private func openConnection() async throws -> PostgresConnection {
        if let connection, !connection.isClosed { return connection }
        guard !isClosed else { throw CancellationError() }
        nextConnectionID += 1
        let opened = try await PostgresConnection.connect(configuration: try connectionConfiguration(), id: nextConnectionID, logger: logger)
        // The actor was free while connecting: `close()` may have come meanwhile.
        guard !isClosed else {
            try? await opened.close()
            throw CancellationError()
        }
        connection = opened
        return opened
    }

    /// The pool's settings, for one connection.
    private func connectionConfiguration() throws -> PostgresConnection.Configuration {
        let tls: PostgresConnection.Configuration.TLS =
            switch url.sslMode {
            case "require": .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
            case "prefer": .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
            default: .disable
            }
        var configuration = PostgresConnection.Configuration(
            host: url.host, port: url.port, username: url.username, password: url.password, database: url.database, tls: tls)
        configuration.options.connectTimeout = .seconds(3)
        return configuration
    }
}

import Foundation
import PostgresNIO

/// Parses `postgres://user:password@host:port/database[?sslmode=disable|prefer|require]` into a
/// `PostgresClient.Configuration`.
///
/// The password never appears in errors or descriptions.
public struct DatabaseURL: Sendable, CustomStringConvertible {
    /// The server's host name or address.
    public let host: String
    /// The server's port.
    public let port: Int
    /// The role to connect as.
    public let username: String
    /// The role's password, if any.
    public let password: String?
    /// The database name.
    public let database: String
    /// Whether to use TLS: `disable`, `prefer` or `require`.
    public let sslMode: String

    /// Parses `text`, throwing a `StorageError.invalidDatabaseURL` that says what is wrong.
    public init(_ text: String) throws(StorageError) {
        guard let components = URLComponents(string: text),
            let scheme = components.scheme, ["postgres", "postgresql"].contains(scheme)
        else {
            throw .invalidDatabaseURL("expected postgres://user:password@host:port/database")
        }
        guard let host = components.host, !host.isEmpty else {
            throw .invalidDatabaseURL("the URL names no host")
        }
        guard let username = components.user, !username.isEmpty else {
            throw .invalidDatabaseURL("the URL names no user")
        }
        let database = String(components.path.drop(while: { $0 == "/" }))
        guard !database.isEmpty else {
            throw .invalidDatabaseURL("the URL names no database")
        }
        let sslMode = components.queryItems?.first(where: { $0.name == "sslmode" })?.value ?? "disable"
        guard ["disable", "prefer", "require"].contains(sslMode) else {
            throw .invalidDatabaseURL("sslmode must be disable, prefer or require")
        }
        self.host = host
        self.port = components.port ?? 5432
        self.username = username.removingPercentEncoding ?? username
        self.password = components.password.map { $0.removingPercentEncoding ?? $0 }
        self.database = database
        self.sslMode = sslMode
    }

    /// The same URL pointing at another database on the same server.
    public func with(database: String) -> DatabaseURL {
        DatabaseURL(host: host, port: port, username: username, password: password, database: database, sslMode: sslMode)
    }

    private init(host: String, port: Int, username: String, password: String?, database: String, sslMode: String) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
        self.sslMode = sslMode
    }

    /// A PostgresNIO client configuration with short connect timeouts, so readiness reflects an outage quickly.
    public var clientConfiguration: PostgresClient.Configuration {
        let tls: PostgresClient.Configuration.TLS =
            switch sslMode {
            case "require": .require(.makeClientConfiguration())
            case "prefer": .prefer(.makeClientConfiguration())
            default: .disable
            }
        var configuration = PostgresClient.Configuration(
            host: host, port: port, username: username, password: password, database: database, tls: tls
        )
        configuration.options.connectTimeout = .seconds(3)
        configuration.options.additionalStartupParameters = Self.sessionLimits
        return configuration
    }

    /// Set on every connection a service opens, so no statement or forgotten transaction holds a
    /// pooled connection and its locks for long: a statement (lock waits included) ends after 30 s,
    /// a transaction idle for 60 s is ended by PostgreSQL. Migrations lift the statement limit in
    /// their own transaction (`SET LOCAL`).
    public static let sessionLimits: [(String, String)] = [
        ("statement_timeout", "30s"), ("idle_in_transaction_session_timeout", "60s"),
    ]

    /// The URL without its password, safe to log.
    public var description: String { "postgres://\(username)@\(host):\(port)/\(database)" }
}

extension DatabaseURL {
    /// The URL as text again, password included: for handing to a child process or a service
    /// configuration, never for logging (use `description`).
    public var connectionString: String {
        var components = URLComponents()
        components.scheme = "postgres"
        components.user = username
        components.password = password
        components.host = host
        components.port = port
        components.path = "/" + database
        components.queryItems = [URLQueryItem(name: "sslmode", value: sslMode)]
        return components.string!
    }
}

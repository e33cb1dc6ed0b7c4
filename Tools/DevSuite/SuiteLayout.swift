import Crypto
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Where one local suite lives and listens: its state folder, its ports, how many replicas it
/// runs, and where the programs it starts are. Read from the `SESAME_DEV_*` environment that
/// `./sesame-dev` sets (its defaults match the README's).
public struct SuiteLayout: Sendable {
    /// The checkout, for the gateway's shared files under `deploy/`.
    public var root: String
    /// The state folder: logs, pid files, the master key, the gateway's configuration.
    public var state: String
    public var postgresPort: Int
    public var kafkaPort: Int
    public var gatewayPort: Int
    public var authPort: Int
    public var deliveryPort: Int
    public var adminPort: Int
    /// The programs the suite runs.
    public var tools: SuiteTools

    public var logs: String { state + "/logs" }
    public var pids: String { state + "/pids" }

    /// The PostgreSQL cluster's folder. initdb refuses to run as root: then the cluster belongs to
    /// the `postgres` user, in a folder that user can reach whatever the permissions of the
    /// checkout's parents.
    public var postgresRoot: String {
        guard geteuid() == 0 else { return state + "/postgres" }
        return "/tmp/sesame-dev-pg-\(sha256Hex(state).prefix(12))"
    }
    public var postgresData: String { postgresRoot + "/data" }
    public var databaseURL: String { databaseURL(port: postgresPort) }
    /// The file the services read their database URL from, and follow (`SESAME_DATABASE_URL_FILE`).
    public var databaseURLFile: String { state + "/database.url" }

    /// The suite's database at `port` (where the cluster listens after a move).
    public func databaseURL(port: Int) -> String { "postgres://sesame@127.0.0.1:\(port)/sesame" }

    /// The layout `./sesame-dev` describes in `environment`.
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) throws -> SuiteLayout {
        func value(_ name: String) throws -> String {
            guard let value = environment[name], !value.isEmpty else {
                throw SuiteError("\(name) is not set: run this through ./sesame-dev, which sets up the tools first")
            }
            return value
        }
        func port(_ name: String, _ fallback: Int) throws -> Int {
            guard let text = environment[name] else { return fallback }
            guard let port = Int(text), (1...65535).contains(port) else { throw SuiteError("\(name) is not a port: \(text)") }
            return port
        }
        let home = try value("SESAME_DEV_HOME")
        return SuiteLayout(
            root: try value("SESAME_DEV_ROOT"),
            state: environment["SESAME_DEV_STATE"].flatMap { $0.isEmpty ? nil : $0 } ?? home + "/run",
            postgresPort: try port("SESAME_DEV_PG_PORT", 55432),
            kafkaPort: try port("SESAME_DEV_KAFKA_PORT", 9092),
            gatewayPort: try port("SESAME_DEV_GATEWAY_PORT", 8080),
            authPort: try port("SESAME_DEV_AUTH_PORT", 8081),
            deliveryPort: try port("SESAME_DEV_DELIVERY_PORT", 8082),
            adminPort: try port("SESAME_DEV_ADMIN_PORT", 8083),
            tools: SuiteTools(
                postgresBin: try value("SESAME_DEV_PG_BIN"), tansu: environment["SESAME_DEV_TANSU_BIN"] ?? "",
                nginx: try value("SESAME_DEV_NGINX_BIN"), libraries: try value("SESAME_DEV_LIB_DIR"),
                services: environment["SESAME_DEV_BIN_DIR"] ?? ""))
    }

    /// The service processes for these replica counts, as (name, port): auth on `authPort`, then
    /// `auth-2` ten ports up, …; delivery likewise; one admin.
    func services(_ replicas: Replicas) -> [ServiceProcess] {
        replicaProcesses(.auth, base: authPort, count: replicas.auth) + replicaProcesses(.delivery, base: deliveryPort, count: replicas.delivery)
            + [ServiceProcess(service: .admin, name: "admin", port: adminPort)]
    }

    private func replicaProcesses(_ service: SuiteService, base: Int, count: Int) -> [ServiceProcess] {
        (1...max(1, count)).map { index in
            ServiceProcess(service: service, name: index == 1 ? service.rawValue : "\(service.rawValue)-\(index)", port: base + 10 * (index - 1))
        }
    }
}

/// The programs a suite runs; found (and installed when missing) by `./sesame-dev`.
public struct SuiteTools: Sendable {
    /// PostgreSQL's `bin` folder (initdb, pg_ctl, psql, createdb).
    public var postgresBin: String
    /// Tansu, the Kafka-protocol broker; empty when it is not installed (needed only to start one).
    public var tansu: String
    public var nginx: String
    /// Where the librdkafka the services load is.
    public var libraries: String
    /// The folder of the built `sesame-auth`, `sesame-delivery` and `sesame-admin`; empty when
    /// nothing was built (needed only to start or run them).
    public var services: String
}

/// The three services.
public enum SuiteService: String, Sendable, CaseIterable {
    case auth, delivery, admin
}

/// One service process of the suite.
struct ServiceProcess: Sendable {
    var service: SuiteService
    /// `auth`, `delivery-2`, …: its pid file's and log's name.
    var name: String
    var port: Int
}

/// How many auth and delivery replicas a suite runs.
public struct Replicas: Sendable, Equatable {
    public var auth: Int
    public var delivery: Int

    public init(auth: Int = 1, delivery: Int = 1) {
        self.auth = auth
        self.delivery = delivery
    }
}

/// A suite operation that could not be done, said as the operator should read it.
public struct SuiteError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// The SHA-256 of `text`'s UTF-8, in lowercase hex (`sha256sum`'s).
func sha256Hex(_ text: String) -> String {
    SHA256.hash(data: Data(text.utf8)).map { String(format: "%02x", $0) }.joined()
}

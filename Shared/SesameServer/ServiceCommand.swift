import ArgumentParser
import Foundation
import Hummingbird
import Logging
import PostgresNIO
import ServiceLifecycle
import SesameConfiguration
import SesameEncryption
import SesameLogging
import SesameStorage

/// The command line of every Sesame service executable: `serve` (the default), `migrate`,
/// `rewrap-secrets` and the service's own `commands`.
public struct ServiceCommand<Service: SesameServiceDefinition>: AsyncParsableCommand {
    public static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: "sesame-\(Service.name)",
            abstract: "The Sesame \(Service.name) service. Configured through SESAME_* environment variables (see README).",
            subcommands: [Serve.self, Migrate.self, RewrapSecrets.self] + Service.commands,
            defaultSubcommand: Serve.self
        )
    }

    public init() {}

    /// Runs the HTTP service until SIGTERM or SIGINT, then drains in-flight requests and stops.
    public struct Serve: AsyncParsableCommand {
        public static var configuration: CommandConfiguration {
            CommandConfiguration(abstract: "Migrate the database if needed, then serve HTTP.")
        }

        public init() {}

        public func run() async throws {
            let configuration = try loadConfiguration(Service.self, serving: true)
            SesameLogging.bootstrap(json: configuration.logFormat == .json, level: configuration.logLevel)
            DescriptorLimit.raise()
            // Before the application: its router adds the request spans only when this says so.
            let tracing: (any ServiceLifecycle.Service)?
            do {
                tracing = try TracingBootstrap.start(
                    serviceName: "sesame-\(Service.name)", instance: "\(configuration.host):\(configuration.port)",
                    environment: ProcessInfo.processInfo.environment, logger: Logger(label: "sesame-\(Service.name).tracing"))
            } catch {
                FileHandle.standardError.write(Data("sesame-\(Service.name): configuration error: OTEL_*: \(error)\n".utf8))
                throw ExitCode(78)  // EX_CONFIG
            }
            let app = try Service.buildApplication(configuration: configuration, observability: tracing.map { [$0] } ?? [])
            try await app.runService()
        }
    }

    /// Applies pending migrations and exits.
    public struct Migrate: AsyncParsableCommand {
        public static var configuration: CommandConfiguration {
            CommandConfiguration(abstract: "Apply pending database migrations and exit.")
        }

        public init() {}

        public func run() async throws {
            let applied = try await withOneShotDatabase(Service.self, task: "migrate") { database, _, logger in
                try await Migrator().migrate(database.client, logger: logger)
            }
            print(applied.isEmpty ? "Database is up to date." : "Applied migrations: \(applied.map(String.init).joined(separator: ", ")).")
        }
    }
}

extension ServiceCommand {
    /// Re-wraps every stored secret under the current master key, after a rotation.
    public struct RewrapSecrets: AsyncParsableCommand {
        public static var configuration: CommandConfiguration {
            CommandConfiguration(
                commandName: "rewrap-secrets",
                abstract: "Re-wrap every secret at rest under SESAME_MASTER_KEY (old keys in SESAME_MASTER_KEY_PREVIOUS), then exit.",
                discussion: "Run it after rotating the master key; when it reports no failures, drop the old key from SESAME_MASTER_KEY_PREVIOUS."
            )
        }

        public init() {}

        public func run() async throws {
            let report = try await withOneShotDatabase(Service.self, task: "rewrap") { database, configuration, logger in
                let keyring = try MasterKeyring(current: configuration.masterKey.current, previous: configuration.masterKey.previous)
                return try await MasterKeyRewrapper(encryption: EnvelopeEncryption(keyring: keyring)).run(on: database.client, logger: logger)
            }
            print("Re-wrapped \(report.rewrapped) secret(s); \(report.failed) could not be opened.")
            if report.failed > 0 { throw ExitCode.failure }
        }
    }
}

/// For one-shot subcommands: reads the configuration, sets up logging, runs a database pool for the
/// duration of `body`, and shuts the pool down afterwards.
public func withOneShotDatabase<Service: SesameServiceDefinition, Result: Sendable>(
    _ service: Service.Type,
    task: String,
    _ body: @Sendable (Database, ServiceConfiguration, Logger) async throws -> Result
) async throws -> Result {
    let configuration = try loadConfiguration(Service.self)
    SesameLogging.bootstrap(json: configuration.logFormat == .json, level: configuration.logLevel)
    let logger = Logger(label: "sesame-\(Service.name).\(task)")
    // A one-shot task needs a few connections (a lock held on one while it works on another), not a service's pool.
    let database = Database(url: try DatabaseURL(configuration.databaseURL), poolSize: 4, logger: logger)
    return try await withThrowingTaskGroup(of: Result?.self) { group in
        group.addTask {
            try await database.run()
            return nil
        }
        defer { group.cancelAll() }
        // What an operator's command appends to an app's audit log is sealed as a request's is.
        let seal = AuditSeal(masterKey: configuration.masterKey.current, previous: configuration.masterKey.previous)
        return try await AuditSeal.$bound.withValue(seal) { try await body(database, configuration, logger) }
    }
}

/// Reads the configuration; on a problem prints one line naming the variable and exits non-zero.
/// `serving`: for the server (which alone may need the operator token), not a one-shot command.
func loadConfiguration<Service: SesameServiceDefinition>(_ service: Service.Type, serving: Bool = false) throws -> ServiceConfiguration {
    do {
        return try ServiceConfiguration(
            environment: ProcessInfo.processInfo.environment, defaultPort: Service.defaultPort,
            requiresOperatorToken: serving && Service.servesOperators)
    } catch {
        FileHandle.standardError.write(Data("sesame-\(Service.name): configuration error: \(error)\n".utf8))
        throw ExitCode(78)  // EX_CONFIG
    }
}

import ArgumentParser
import DevSuite
import Foundation

/// `sesame-suite`: the local suite's lifecycle, which `./sesame-dev` runs after installing what is
/// missing and building. Run it through `./sesame-dev`, which sets the `SESAME_DEV_*` environment
/// that says where the suite lives and where its programs are.
@main
struct SesameSuite: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sesame-suite",
        abstract: "Start, stop and fault the local Sesame suite (run it through ./sesame-dev).",
        subcommands: [Up.self, Down.self, Status.self, Broker.self, Database.self, Backup.self, Restore.self, Run.self])

    /// The suite the environment describes.
    static func suite() throws -> DevelopmentSuite {
        try DevelopmentSuite(layout: SuiteLayout.fromEnvironment())
    }

    /// Runs `body`, turning a suite error into one line on standard error and exit status 1.
    static func reporting(_ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch let error as SuiteError {
            FileHandle.standardError.write(Data("sesame-dev: \(error.description)\n".utf8))
            throw ExitCode.failure
        }
    }
}

struct Up: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Start what is not running and wait until every service is ready.")
    @Option(help: "Auth replicas (1–9), on 8081, 8091, …") var authReplicas = 1
    @Option(help: "Delivery replicas (1–9), on 8082, 8092, …") var deliveryReplicas = 1

    func run() async throws {
        try await SesameSuite.reporting { try await SesameSuite.suite().up(Replicas(auth: authReplicas, delivery: deliveryReplicas)) }
    }
}

struct Down: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Stop everything up started (and only that).")
    @Flag(help: "Also delete the suite's state: the database, the master key, the logs.") var purge = false

    func run() async throws {
        try await SesameSuite.reporting { try await SesameSuite.suite().down(purge: purge) }
    }
}

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "What is running, and each service's readiness.")

    func run() async throws {
        try await SesameSuite.reporting { print(try await SesameSuite.suite().status()) }
    }
}

/// Stop or start one of the suite's components, for outage drills.
enum Switch: String, ExpressibleByArgument, CaseIterable {
    case stop, start
}

struct Broker: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Stop or restart the broker (it comes back empty).")
    @Argument(help: "stop or start") var action: Switch

    func run() async throws {
        try await SesameSuite.reporting {
            let suite = try SesameSuite.suite()
            switch action {
            case .stop: await suite.stopBroker()
            case .start: try await suite.startBroker()
            }
        }
    }
}

struct Database: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Stop or restart PostgreSQL (starting creates the cluster if there is none).")
    @Argument(help: "stop or start") var action: Switch

    func run() async throws {
        try await SesameSuite.reporting {
            let suite = try SesameSuite.suite()
            switch action {
            case .stop: try await suite.stopDatabase()
            case .start: try await suite.startDatabase()
            }
        }
    }
}

struct Backup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Back up the running suite's database to FILE (pg_dump's custom format).")
    @Argument(help: "Where to write the backup.") var file: String

    func run() async throws {
        try await SesameSuite.reporting { try await SesameSuite.suite().backup(to: file) }
    }
}

struct Restore: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Destroy the suite's database and restore FILE into a fresh cluster; the services reconnect.")
    @Argument(help: "A backup from `backup`.") var file: String

    func run() async throws {
        try await SesameSuite.reporting { try await SesameSuite.suite().restore(from: file) }
    }
}

extension SuiteService: ExpressibleByArgument {}

struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a service's operator command against the suite, e.g. `run auth rotate-signing-key --now`.")
    @Argument(help: "auth, delivery or admin") var service: SuiteService
    @Argument(parsing: .captureForPassthrough, help: "The command and its options (see sesame-SERVICE --help).") var arguments: [String] = []

    func run() async throws {
        try await SesameSuite.reporting {
            let status = try await SesameSuite.suite().run(service, arguments).status
            if status != 0 { throw ExitCode(status) }
        }
    }
}

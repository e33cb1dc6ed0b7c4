import ChildProcess
import Foundation

/// The whole Sesame suite on this machine, without Docker: a private PostgreSQL, Tansu (Kafka
/// protocol, memory only), auth and delivery replicas, admin and the nginx gateway, started,
/// stopped and faulted by pid file. `./sesame-dev` installs what is missing and builds; this does
/// the rest, for the `sesame-suite` command and for the walk and the soak, which use it directly.
public struct DevelopmentSuite: Sendable {
    public let layout: SuiteLayout
    /// Set for the services (and their one-shot commands) on top of this process's environment.
    public let extraEnvironment: [String: String]
    private let daemons: Daemons
    private let postgres: PostgresCluster
    private let gateway: Gateway
    private let masterKey: MasterKey

    /// A suite laid out as `layout`; its services also get `extraEnvironment`.
    public init(layout: SuiteLayout, extraEnvironment: [String: String] = [:]) {
        self.layout = layout
        self.extraEnvironment = extraEnvironment
        self.daemons = Daemons(pids: layout.pids)
        self.postgres = PostgresCluster(layout: layout, say: Self.say)
        self.gateway = Gateway(layout: layout, say: Self.say)
        self.masterKey = MasterKey(layout: layout, warn: Self.warn)
    }

    /// A progress line on standard output (written at once, in order with the programs it starts).
    @Sendable static func say(_ line: String) {
        FileHandle.standardOutput.write(Data("\u{1B}[1m==>\u{1B}[0m \(line)\n".utf8))
    }

    @Sendable static func warn(_ line: String) {
        FileHandle.standardError.write(Data("sesame-dev: \(line)\n".utf8))
    }

    // MARK: The suite

    /// The replica counts the last `up` of this state folder started.
    public var replicas: Replicas {
        func count(_ service: String) -> Int {
            (try? String(contentsOfFile: "\(layout.state)/\(service)-replicas", encoding: .utf8))
                .flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 1
        }
        return Replicas(auth: count("auth"), delivery: count("delivery"))
    }

    /// Starts whatever of the suite is not running, with `replicas`, and waits until every service
    /// is ready. Replicas beyond the counts stop; the gateway balances exactly these. Nothing
    /// starts when the database was sealed under another master key.
    public func up(_ wanted: Replicas = Replicas()) async throws {
        guard (1...9).contains(wanted.auth), (1...9).contains(wanted.delivery) else {
            throw SuiteError("up: replica counts go from 1 to 9")
        }
        try createFolders()
        let wantedNames = Set(layout.services(wanted).map(\.name))
        for process in layout.services(replicas) where !wantedNames.contains(process.name) {
            if await daemons.stop(process.name) { Self.say("stopped sesame-\(process.name)") }
        }
        try "\(wanted.auth)\n".write(toFile: layout.state + "/auth-replicas", atomically: true, encoding: .utf8)
        try "\(wanted.delivery)\n".write(toFile: layout.state + "/delivery-replicas", atomically: true, encoding: .utf8)
        let key = try masterKey.value()
        // A state folder that lost its key is refused before anything starts.
        if masterKey.isRecorded { try masterKey.check(key) }
        try await startDatabase()
        try await postgres.createDatabase("sesame")
        try await startBroker()
        try masterKey.check(key)
        let services = layout.services(wanted)
        for process in services { try await start(process, masterKey: key) }
        try await gateway.start(balancing: services)
        try await waitUntilReady(services, seconds: 120)
        FileHandle.standardOutput.write(Data((banner(services) + "\n").utf8))
    }

    /// Stops everything `up` started (and only that); with `purge` also deletes its state: the
    /// database, the master key, the logs.
    public func down(purge: Bool = false) async throws {
        if try await gateway.stop() { Self.say("stopped the gateway") }
        let files = (try? FileManager.default.contentsOfDirectory(atPath: layout.pids)) ?? []
        let serviceNames = files.filter { $0.hasSuffix(".pid") }.map { String($0.dropLast(4)) }.filter { $0 != "tansu" }
        // Admin first, then delivery, then auth: what depends on the others stops first.
        for prefix in ["admin", "delivery", "auth"] {
            for name in serviceNames.filter({ $0.hasPrefix(prefix) }).sorted(by: >) where await daemons.stop(name) {
                Self.say("stopped sesame-\(name)")
            }
        }
        await stopBroker()
        if FileManager.default.fileExists(atPath: layout.tools.postgresBin), try await postgres.stop() { Self.say("stopped PostgreSQL") }
        if purge {
            try? FileManager.default.removeItem(atPath: layout.state)
            try? FileManager.default.removeItem(atPath: layout.postgresRoot)
            Self.say("deleted \(layout.state) and \(layout.postgresRoot)")
        }
    }

    /// What runs, and each service's readiness, a line each.
    public func status() async -> String {
        let services = layout.services(replicas)
        var lines: [String] = []
        for name in ["tansu"] + services.map(\.name) {
            lines.append(daemons.runningPID(name).map { "\(name): running (pid \($0))" } ?? "\(name): stopped")
        }
        lines.append(gateway.isRunning ? "gateway: running on :\(layout.gatewayPort)" : "gateway: stopped")
        for process in services {
            lines.append("\(process.name) /health/ready: \(await Readiness.probe(port: process.port).map { "\($0.status)" } ?? "000")")
        }
        return lines.joined(separator: "\n")
    }

    // MARK: Outage drills

    /// Starts Tansu unless it runs.
    public func startBroker() async throws {
        try createFolders()
        if daemons.runningPID("tansu") != nil {
            Self.say("Tansu already running on 127.0.0.1:\(layout.kafkaPort)")
            return
        }
        guard !layout.tools.tansu.isEmpty else { throw SuiteError("Tansu is not installed (./sesame-dev installs it)") }
        Self.say("starting Tansu (Kafka protocol, memory only) on 127.0.0.1:\(layout.kafkaPort)")
        let listener = "tcp://127.0.0.1:\(layout.kafkaPort)"
        let log = layout.logs + "/tansu.log"
        try await daemons.start(
            "tansu", executable: layout.tools.tansu,
            arguments: ["broker", "--listener-url", listener, "--advertised-listener-url", listener, "--storage-engine", "memory://tansu/"],
            environment: ProcessInfo.processInfo.environment, log: log, appending: false)
        try await daemons.waitForPort(layout.kafkaPort, of: "Tansu", seconds: 30, log: log)
    }

    /// Stops Tansu if it runs (it keeps nothing: a started broker is empty).
    public func stopBroker() async {
        if await daemons.stop("tansu") { Self.say("stopped Tansu") }
    }

    /// Starts PostgreSQL (creating the cluster first if there is none).
    public func startDatabase() async throws {
        try createFolders()
        // A cluster started here listens where the layout says; one already running may have moved.
        if try await postgres.start() || !FileManager.default.fileExists(atPath: layout.databaseURLFile) {
            try pointServices(atDatabasePort: layout.postgresPort)
        }
    }

    /// Stops PostgreSQL and starts the same cluster on `port`, then writes the new URL into the
    /// file the running services follow: to them, a failover to a primary at another address.
    /// `startDatabase` after a `stopDatabase` (and `up` after `down`) bring it back to the
    /// layout's port; backups and restores assume it is there.
    public func moveDatabase(to port: Int) async throws {
        try await stopDatabase()
        try await postgres.start(port: port)
        try pointServices(atDatabasePort: port)
        Self.say("PostgreSQL moved to 127.0.0.1:\(port); the services follow \(layout.databaseURLFile)")
    }

    /// Writes the database URL the services follow (a new file renamed over the old one, so a
    /// service never reads half of it).
    private func pointServices(atDatabasePort port: Int) throws {
        try (layout.databaseURL(port: port) + "\n").write(toFile: layout.databaseURLFile, atomically: true, encoding: .utf8)
    }

    /// The pid of the suite's process `name` (`auth`, `delivery-2`, …) while it runs.
    public func runningPID(of name: String) -> pid_t? { daemons.runningPID(name) }

    /// Stops PostgreSQL, ending its sessions.
    public func stopDatabase() async throws {
        if try await postgres.stop() { Self.say("stopped PostgreSQL") }
    }

    // MARK: Backup and restore

    /// Writes a backup of the suite's database to `file` while everything runs. With the master
    /// key (`master.key` in the state folder), it is all a restore needs: secrets in the database
    /// are sealed under that key.
    public func backup(to file: String) async throws {
        try await postgres.dump("sesame", to: file)
        Self.say("backed up the database to \(file)")
    }

    /// Replaces the suite's database with the backup in `file`: the cluster is destroyed and a
    /// fresh one made, the backup restored into it, while the services run on (they answer 503
    /// meanwhile and reconnect). The backup goes into a database of another name, renamed
    /// `sesame` once whole: a service that reconnected mid-restore would otherwise read half the
    /// tables (a delivery replica caching an app without its configs).
    public func restore(from file: String) async throws {
        guard FileManager.default.fileExists(atPath: file) else { throw SuiteError("no backup at \(file)") }
        try await postgres.destroy()
        Self.say("destroyed the database cluster")
        try await startDatabase()
        try await postgres.createDatabase("sesame_restoring")
        try await postgres.restore("sesame_restoring", from: file)
        try await postgres.renameDatabase("sesame_restoring", to: "sesame")
        Self.say("restored \(file) into a fresh cluster")
    }

    // MARK: Services

    /// Runs `sesame-SERVICE arguments…` (an operator command) against the suite, to its end; with
    /// `capture`, returns what it wrote to both streams, else it writes where this process does.
    /// `started` is told its pid once it runs.
    public func run(
        _ service: SuiteService, _ arguments: [String], capture: Bool = false, started: (@Sendable (pid_t) -> Void)? = nil
    ) async throws -> (status: Int32, output: String) {
        try await ChildProcess.run(
            try executable(service), arguments, environment: try serviceEnvironment(masterKey: try masterKey.value()), capture: capture,
            includingErrors: capture, inheritOutput: !capture, started: started)
    }

    private func executable(_ service: SuiteService) throws -> String {
        guard !layout.tools.services.isEmpty else { throw SuiteError("SESAME_DEV_BIN_DIR is not set: ./sesame-dev builds the services and sets it") }
        let path = "\(layout.tools.services)/sesame-\(service.rawValue)"
        guard FileManager.default.isExecutableFile(atPath: path) else { throw SuiteError("\(path) is not built (./sesame-dev up builds it)") }
        return path
    }

    private func start(_ process: ServiceProcess, masterKey: String) async throws {
        if daemons.runningPID(process.name) != nil {
            Self.say("\(process.name) already running on 127.0.0.1:\(process.port)")
            return
        }
        Self.say("starting sesame-\(process.name) on 127.0.0.1:\(process.port)")
        var environment = try serviceEnvironment(masterKey: masterKey)
        environment["SESAME_PORT"] = "\(process.port)"
        // Replicas (delivery-2, …) run the same executable.
        try await daemons.start(
            process.name, executable: try executable(process.service), arguments: ["serve"], environment: environment,
            log: "\(layout.logs)/\(process.name).log")
    }

    /// The environment the local suite's services (and their one-shot commands) run with.
    func serviceEnvironment(masterKey: String) throws -> [String: String] {
        var inherited = ProcessInfo.processInfo.environment.merging(extraEnvironment) { $1 }
        // The services follow the URL file (`moveDatabase`); the variable beside it would be refused.
        inherited["SESAME_DATABASE_URL"] = nil
        if !FileManager.default.fileExists(atPath: layout.databaseURLFile) { try pointServices(atDatabasePort: layout.postgresPort) }
        let libraryPath = [layout.tools.libraries, inherited["LD_LIBRARY_PATH"]].compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: ":")
        return inherited.merging([
            "SESAME_ENVIRONMENT": "development",
            "SESAME_DATABASE_URL_FILE": layout.databaseURLFile,
            "SESAME_KAFKA_BROKERS": "127.0.0.1:\(layout.kafkaPort)",
            // Tansu in memory forgets producer ids when restarted, which an idempotent producer
            // never recovers from. Order is still kept (one request in flight).
            "SESAME_KAFKA_IDEMPOTENCE": "off",
            "SESAME_MASTER_KEY": masterKey,
            "SESAME_HOST": "127.0.0.1",
            // The gateway on loopback is the only proxy whose X-Forwarded-For is believed.
            "SESAME_TRUSTED_PROXIES": "127.0.0.1",
            // Passkeys are bound to a host name, not an address: the dashboard is http://localhost:PORT.
            "SESAME_DASHBOARD_ORIGIN": "http://localhost:\(layout.gatewayPort)",
            "SESAME_LOG_FORMAT": inherited["SESAME_LOG_FORMAT"] ?? "json",
            "SESAME_LOG_LEVEL": inherited["SESAME_LOG_LEVEL"] ?? "info",
            "LD_LIBRARY_PATH": libraryPath,
        ]) { $1 }
    }

    private func waitUntilReady(_ services: [ServiceProcess], seconds: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(seconds)
        for process in services {
            let log = "\(layout.logs)/\(process.name).log"
            while true {
                let answer = await Readiness.probe(port: process.port)
                if answer?.status == 200 { break }
                guard daemons.runningPID(process.name) != nil else {
                    let tail = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").suffix(20).joined(separator: "\n")
                    FileHandle.standardError.write(Data((tail + "\n").utf8))
                    throw SuiteError("sesame-\(process.name) exited (see \(log))")
                }
                guard ContinuousClock.now < deadline else {
                    throw SuiteError("sesame-\(process.name) is not ready after \(seconds) s: \(answer?.body ?? "no answer") (see \(log))")
                }
                try await Task.sleep(for: .milliseconds(300))
            }
        }
    }

    private func createFolders() throws {
        for folder in [layout.logs, layout.pids] { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) }
    }

    private func banner(_ services: [ServiceProcess]) -> String {
        func urls(_ service: SuiteService) -> String {
            services.filter { $0.service == service }.map { "http://127.0.0.1:\($0.port) " }.joined()
        }
        return """

            Sesame is up.
              gateway     http://127.0.0.1:\(layout.gatewayPort)/v1/...   (auth /v1/auth/*, admin /v1/admin/*, delivery the rest)
              auth        \(urls(.auth))
              delivery    \(urls(.delivery))
              admin       http://127.0.0.1:\(layout.adminPort)
              health      http://127.0.0.1:\(layout.gatewayPort)/health/{auth,delivery,admin}/ready
              PostgreSQL  \(layout.databaseURL)
              Kafka       127.0.0.1:\(layout.kafkaPort) (Tansu, memory only)
              logs        \(layout.logs)   (./sesame-dev logs auth)
            Stop it with: ./sesame-dev down
            """
    }
}

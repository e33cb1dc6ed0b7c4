import ChildProcess
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The suite's private PostgreSQL cluster: created on first start, owned by the `postgres` user
/// when this runs as root (initdb refuses root).
struct PostgresCluster: Sendable {
    let layout: SuiteLayout
    let say: @Sendable (String) -> Void

    private var data: String { layout.postgresData }
    private var log: String { layout.postgresRoot + "/postgres.log" }

    /// Runs one of PostgreSQL's programs as the cluster's owner, from `/` so that user never needs
    /// to reach the caller's working directory.
    private func run(_ program: String, _ arguments: [String], capture: Bool = true) async throws -> (status: Int32, output: String) {
        let executable = "\(layout.tools.postgresBin)/\(program)"
        let environment = ProcessInfo.processInfo.environment
        if geteuid() == 0 {
            return try await ChildProcess.run(
                "/usr/sbin/runuser", ["-u", "postgres", "--", executable] + arguments, environment: environment, capture: capture,
                includingErrors: true, workingDirectory: "/")
        }
        return try await ChildProcess.run(executable, arguments, environment: environment, capture: capture, includingErrors: true, workingDirectory: "/")
    }

    var isRunning: Bool {
        get async { (try? await run("pg_ctl", ["-D", data, "status"]).status) == 0 }
    }

    /// Starts the cluster on `port` (by default the layout's), creating it first if there is
    /// none; whether it started (false: it was running).
    @discardableResult
    func start(port: Int? = nil) async throws -> Bool {
        let port = port ?? layout.postgresPort
        if await isRunning {
            say("PostgreSQL already running")
            return false
        }
        let files = FileManager.default
        if !files.fileExists(atPath: data + "/PG_VERSION") {
            say("creating a private PostgreSQL cluster in \(data)")
            try files.createDirectory(atPath: data, withIntermediateDirectories: true)
            chmod(layout.postgresRoot, 0o700)
            chmod(data, 0o700)
            if geteuid() == 0 {
                let owned = try await ChildProcess.run("/bin/chown", ["-R", "postgres:", layout.postgresRoot], environment: [:], capture: true)
                guard owned.status == 0 else { throw SuiteError("could not give \(layout.postgresRoot) to the postgres user: \(owned.output)") }
            }
            let initdb = try await run("initdb", ["-D", data, "-U", "sesame", "--auth=trust", "--encoding=UTF8", "--no-instructions"])
            let initdbLog = layout.logs + "/initdb.log"
            try initdb.output.write(toFile: initdbLog, atomically: true, encoding: .utf8)
            guard initdb.status == 0 else { throw SuiteError("initdb failed (see \(initdbLog))") }
        }
        say("starting PostgreSQL on 127.0.0.1:\(port)")
        let link = layout.logs + "/postgres.log"
        try? files.removeItem(atPath: link)
        try? files.createSymbolicLink(atPath: link, withDestinationPath: log)
        // The Swift tests run many suites at once, each with whole services and their pools:
        // PostgreSQL's default of 100 connections (and 300) ran out, and a pool waiting for a
        // connection waits long.
        let options = "-p \(port) -c listen_addresses=127.0.0.1 -k \(layout.postgresRoot) -c max_connections=1000 -c fsync=off"
        let started = try await run("pg_ctl", ["-D", data, "-l", log, "-w", "-t", "60", "-o", options, "start"])
        guard started.status == 0 else { throw SuiteError("PostgreSQL did not start (see \(log))") }
        return true
    }

    /// Stops the cluster if it runs (fast shutdown: sessions are ended); returns whether it ran.
    @discardableResult
    func stop() async throws -> Bool {
        guard FileManager.default.fileExists(atPath: data + "/PG_VERSION"), await isRunning else { return false }
        let stopped = try await run("pg_ctl", ["-D", data, "-m", "fast", "-w", "stop"])
        guard stopped.status == 0 else { throw SuiteError("PostgreSQL did not stop: \(stopped.output)") }
        return true
    }

    /// Writes a dump of database `name` to `file` (pg_dump's custom format, which pg_restore reads).
    func dump(_ name: String, to file: String) async throws {
        let dumped = try await ChildProcess.run(
            "\(layout.tools.postgresBin)/pg_dump", connection + ["--format=custom", "--file=\(file)", name],
            environment: ProcessInfo.processInfo.environment, capture: true, includingErrors: true)
        guard dumped.status == 0 else { throw SuiteError("pg_dump failed: \(dumped.output)") }
    }

    /// Restores `file` (from `dump`) into database `name`, which must be empty.
    func restore(_ name: String, from file: String) async throws {
        let restored = try await ChildProcess.run(
            "\(layout.tools.postgresBin)/pg_restore", connection + ["--dbname=\(name)", "--no-owner", "--exit-on-error", file],
            environment: ProcessInfo.processInfo.environment, capture: true, includingErrors: true)
        guard restored.status == 0 else { throw SuiteError("pg_restore failed: \(restored.output)") }
    }

    /// Stops the cluster and deletes it, its data and all.
    func destroy() async throws {
        try await stop()
        try? FileManager.default.removeItem(atPath: data)
    }

    /// How the client programs reach the cluster: over TCP as `sesame`, so they need not run as
    /// the cluster's owner.
    private var connection: [String] { ["--host=127.0.0.1", "--port=\(layout.postgresPort)", "--username=sesame"] }

    /// Renames database `name` to `newName` (no session may be connected to it).
    func renameDatabase(_ name: String, to newName: String) async throws {
        let connection = ["-h", "127.0.0.1", "-p", "\(layout.postgresPort)", "-U", "sesame"]
        let renamed = try await run("psql", connection + ["-d", "postgres", "-tAc", "ALTER DATABASE \"\(name)\" RENAME TO \"\(newName)\""])
        guard renamed.status == 0 else { throw SuiteError("could not rename database \(name): \(renamed.output)") }
    }

    /// Creates database `name` unless it exists.
    func createDatabase(_ name: String) async throws {
        let connection = ["-h", "127.0.0.1", "-p", "\(layout.postgresPort)", "-U", "sesame"]
        let exists = try await run("psql", connection + ["-d", "postgres", "-tAc", "SELECT 1 FROM pg_database WHERE datname = '\(name)'"])
        guard exists.status == 0 else { throw SuiteError("could not list the databases: \(exists.output)") }
        if exists.output.trimmingCharacters(in: .whitespacesAndNewlines) == "1" { return }
        let created = try await run("createdb", connection + [name])
        guard created.status == 0 else { throw SuiteError("could not create database \(name): \(created.output)") }
    }
}

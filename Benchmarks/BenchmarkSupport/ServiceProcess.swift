import Foundation

/// A Sesame service running as its own process (a release executable), as in production: its
/// memory and CPU are its own, and it can be killed.
public final class ServiceProcess: @unchecked Sendable {
    public let name: String
    public let port: Int
    private let process = Process()

    /// Starts `executable` listening on `port` with `environment` added to this process's own;
    /// its output goes to `log`.
    public init(executable: URL, name: String, port: Int, environment: [String: String], log: URL) throws {
        self.name = name
        self.port = port
        process.executableURL = executable
        var merged = ProcessInfo.processInfo.environment
        merged.merge(environment) { _, new in new }
        merged["SESAME_PORT"] = "\(port)"
        process.environment = merged
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
    }

    public var pid: Int32 { process.processIdentifier }
    public var isRunning: Bool { process.isRunning }
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Resident memory now, MiB.
    public var residentMiB: Double { ResidentMemory.ofProcess(pid) }
    /// CPU seconds used so far.
    public var cpuSeconds: Double { CPUTime.ofProcess("\(pid)") }

    /// Stops it with `signal` (SIGTERM: a graceful shutdown; SIGKILL: a crash) and waits. A
    /// process still running `patience` after SIGTERM is killed, and that is said on standard
    /// output: a service that does not stop is a finding, not a benchmark that waits forever.
    public func stop(signal: Int32 = SIGTERM, patience: Duration = .seconds(30)) {
        guard process.isRunning else { return }
        kill(process.processIdentifier, signal)
        if signal != SIGKILL {
            let deadline = ContinuousClock.now + patience
            while process.isRunning, ContinuousClock.now < deadline { usleep(50_000) }
            if process.isRunning {
                print("\(name) was still running \(patience) after \(signal == SIGTERM ? "SIGTERM" : "signal \(signal)"): killed")
                kill(process.processIdentifier, SIGKILL)
            }
        }
        process.waitUntilExit()
    }

    deinit { stop(signal: SIGKILL) }

    /// Waits until `/health/ready` answers 200; returns how long that took.
    @discardableResult
    public func waitUntilReady(timeout: Duration) async throws -> Duration {
        let clock = ContinuousClock()
        let started = clock.now
        while clock.now - started < timeout {
            guard process.isRunning else { throw BenchmarkFailure("\(name) exited with status \(process.terminationStatus)") }
            if let reply = try? await HTTP.get("\(baseURL)/health/ready"), reply.status == 200 { return clock.now - started }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw BenchmarkFailure("\(name) not ready after \(timeout)")
    }

    /// The service's Prometheus metrics, by sample (`name{labels}` as written) to value.
    public func metrics() async throws -> [String: Double] {
        let reply = try await HTTP.get("\(baseURL)/metrics")
        var samples: [String: Double] = [:]
        for line in reply.bodyText.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            samples[String(line[..<space])] = value
        }
        return samples
    }
}

extension ServiceProcess {
    /// The release `sesame-delivery` beside the running benchmark, or `SESAME_BENCH_DELIVERY`: another
    /// executable to start instead (a script running it under heaptrack or perf).
    public static func releaseDelivery() throws -> URL {
        let delivery = ProcessInfo.processInfo.environment["SESAME_BENCH_DELIVERY"].map { URL(fileURLWithPath: $0) }
            ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("sesame-delivery")
        guard FileManager.default.isExecutableFile(atPath: delivery.path) else {
            throw BenchmarkFailure("no release sesame-delivery beside this benchmark (\(delivery.path)): build it first")
        }
        return delivery
    }
}

/// Why a benchmark stopped.
public struct BenchmarkFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

import ChildProcess
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Long-running programs the suite starts and stops by pid file. They are started in a session of
/// their own and are not this process's children (`setsid -f` forks them away): they outlive the
/// command that started them, and one that exits is reaped by init, never left a zombie that a
/// liveness check would still find.
struct Daemons: Sendable {
    let pids: String

    func pidFile(_ name: String) -> String { "\(pids)/\(name).pid" }

    /// The pid in `pidFile`, if that process is alive.
    static func runningPID(pidFile: String) -> pid_t? {
        guard let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
            let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)), pid > 0, kill(pid, 0) == 0
        else { return nil }
        return pid
    }

    func runningPID(_ name: String) -> pid_t? { Self.runningPID(pidFile: pidFile(name)) }

    /// Starts `executable arguments…` as `name`, its output appended to `log` (or replacing it),
    /// and returns once its pid file is written.
    func start(
        _ name: String, executable: String, arguments: [String], environment: [String: String], log: String, appending: Bool = true
    ) async throws {
        let pidFile = pidFile(name)
        try? FileManager.default.removeItem(atPath: pidFile)
        // The shell writes its own pid, then becomes the program.
        let script = #"echo $$ > "$1"; log="$2"; shift 2; if [ "$APPEND" = 1 ]; then exec "$@" >> "$log" 2>&1 < /dev/null; else exec "$@" > "$log" 2>&1 < /dev/null; fi"#
        var environment = environment
        environment["APPEND"] = appending ? "1" : "0"
        let status = try await ChildProcess.run(
            "/usr/bin/setsid", ["-f", "/bin/sh", "-c", script, "sh", pidFile, log, executable] + arguments, environment: environment,
            workingDirectory: "/")
        guard status.status == 0 else { throw SuiteError("could not start \(name) (setsid exited with \(status.status))") }
        let deadline = ContinuousClock.now + .seconds(5)
        while Self.runningPID(pidFile: pidFile) == nil {
            guard ContinuousClock.now < deadline else { throw SuiteError("\(name) did not start (see \(log))") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Stops `name` (SIGTERM, then SIGKILL after ten seconds) and removes its pid file; returns
    /// whether it was running.
    @discardableResult
    func stop(_ name: String) async -> Bool {
        let pidFile = pidFile(name)
        defer { try? FileManager.default.removeItem(atPath: pidFile) }
        guard let pid = Self.runningPID(pidFile: pidFile) else { return false }
        await Self.terminate(pid)
        return true
    }

    /// SIGTERM, up to ten seconds for it to end, then SIGKILL.
    static func terminate(_ pid: pid_t) async {
        kill(pid, SIGTERM)
        for _ in 0..<100 {
            if kill(pid, 0) != 0 { return }
            try? await Task.sleep(for: .milliseconds(100))
        }
        kill(pid, SIGKILL)
    }

    /// Waits until `port` accepts connections, while `name` runs.
    func waitForPort(_ port: Int, of name: String, seconds: Int, log: String) async throws {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while !(await Self.accepts(port)) {
            guard ContinuousClock.now < deadline else { throw SuiteError("\(name) did not open port \(port) within \(seconds) s (see \(log))") }
            try await Task.sleep(for: .milliseconds(200))
        }
    }

    /// Whether 127.0.0.1:`port` accepts a connection (a local answer is immediate).
    static func accepts(_ port: Int) async -> Bool {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: PortProbe.accepts(host: "127.0.0.1", port: port, timeoutMilliseconds: 500)) }
        }
    }
}

import BenchmarkSupport
import Crypto
import DevSuite
import Foundation

/// What the crash drivers share: patient reads, progress lines, digests, and SQL through psql.
enum CrashSupport {
    /// A GET that tries again on a transport error (a pooled connection the gateway closed while
    /// admin restarted); an answer, whatever its status, is returned as it is.
    static func get(_ url: String, headers: [String: String]) async throws -> HTTP.Reply {
        var attempt = 1
        while true {
            do {
                return try await HTTP.get(url, headers: headers)
            } catch {
                guard attempt < 5 else { throw error }
                try await Task.sleep(for: .milliseconds(200 * attempt))
                attempt += 1
            }
        }
    }

    /// Writes `line` at once (print's buffer would hold a long run's progress until its end when piped).
    static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    static func eventually(timeout: Duration, _ what: String, _ check: () async throws -> Bool) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while clock.now < deadline {
            if try await check() { return }
            try await Task.sleep(for: .milliseconds(200))
        }
        throw BenchmarkFailure("timed out: \(what)")
    }

    static func canonical(_ value: Any) -> [UInt8] {
        Array((try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed])) ?? Data())
    }

    static func digest(_ bytes: [UInt8]) -> String {
        SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
    }

    /// SIGKILL to the suite's process `name` (`admin`, `auth`), found by its pid file; returns
    /// once it is gone (the signal is delivered asynchronously, and a restart that still saw it
    /// would take it for running).
    static func kill(_ name: String, of suite: DevelopmentSuite) async throws {
        guard let pid = suite.runningPID(of: name) else { throw BenchmarkFailure("\(name) is not running") }
        Foundation.kill(pid, SIGKILL)
        // Gone means reaped too: the suite counts a process as running while kill(pid, 0) succeeds.
        try await eventually(timeout: .seconds(10), "\(name) gone after SIGKILL") { Foundation.kill(pid, 0) != 0 }
    }

    /// The median and the worst of `seconds`, formatted.
    static func medianAndWorst(_ seconds: [Double]) -> String {
        let sorted = seconds.sorted()
        guard !sorted.isEmpty else { return "no restarts" }
        return String(format: "%.2f s (median), %.2f s (worst)", sorted[sorted.count / 2], sorted.last ?? 0)
    }
}

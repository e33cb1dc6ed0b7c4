import ChildProcess
import Foundation

/// SQL against a suite's database through psql, for the drivers that check what it holds.
public enum Psql {
    /// One SQL statement's rows, each a list of its columns (psql's unaligned output).
    public static func rows(_ databaseURL: String, _ sql: String) async throws -> [[String]] {
        let (status, output) = try await ChildProcess.run(
            "/usr/bin/env", ["psql", databaseURL, "-AtF", "\t", "-c", sql], environment: ProcessInfo.processInfo.environment, capture: true)
        guard status == 0 else { throw BenchmarkFailure("psql: \(output)") }
        return output.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
    }
}

import Foundation

/// Runs wrk (Debian's) and reads its report.
public enum Wrk {
    /// What one run reported.
    public struct Figures: Sendable {
        /// wrk's own rate (over the whole `-d` duration).
        public var requestsPerSecond = 0.0
        /// The rate a script measured itself (`replies/sec:` lines), when it prints one.
        public var scriptedRepliesPerSecond: Double?
        public var p50 = "?"
        public var p99 = "?"
        /// Replies by status, when a script prints `status N: count` lines.
        public var statuses: [Int: Int] = [:]
        public var non2xx = 0
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Runs `wrk arguments…` to completion; returns the figures and the raw report.
    public static func run(_ arguments: [String]) throws -> (Figures, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["wrk"] + arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let report = String(decoding: data, as: UTF8.self)
        guard process.terminationStatus == 0 else { throw Failure(description: "wrk failed:\n\(report)") }
        return (parse(report), report)
    }

    public static func parse(_ report: String) -> Figures {
        var figures = Figures()
        for line in report.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            if fields.first == "Requests/sec:", fields.count == 2 { figures.requestsPerSecond = Double(fields[1]) ?? 0 }
            if fields.first == "replies/sec:", fields.count >= 2 { figures.scriptedRepliesPerSecond = Double(fields[1]) }
            if fields.count == 2, fields[0] == "50%" { figures.p50 = fields[1] }
            if fields.count == 2, fields[0] == "99%" { figures.p99 = fields[1] }
            if fields.count == 3, fields[0] == "status", let status = Int(fields[1].dropLast()), let count = Int(fields[2]) {
                figures.statuses[status] = count
            }
            if line.contains("Non-2xx or 3xx responses:"), let count = fields.last.flatMap({ Int($0) }) { figures.non2xx = count }
        }
        return figures
    }
}

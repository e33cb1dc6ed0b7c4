import Foundation

/// One wrk run over a file of request bodies (see replay.lua) and what it reported.
struct WrkRun {
    /// What wrk measured.
    struct Figures {
        var requestsPerSecond = 0.0
        var p50 = ""
        var p99 = ""
        var statuses: [Int: Int] = [:]
    }

    let url: String
    let bodiesPath: String
    let capturePath: String?
    /// How many bodies the file holds: wrk is given time enough to send them all (at 250/s or more).
    let count: Int
    var threads = 2
    var connections = 16

    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("replay.lua").path

    /// Runs wrk to completion (every body sent once) and parses its report.
    func run() throws -> (Figures, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        var arguments = [
            "wrk", "-t\(threads)", "-c\(connections)", "-d\(max(10, count / 250))s", "--latency", "--timeout", "10s", "-s", Self.script, url, "--",
            bodiesPath, "\(threads)",
        ]
        if let capturePath { arguments.append(capturePath) }
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let report = String(decoding: data, as: UTF8.self)
        guard process.terminationStatus == 0 else { throw BenchmarkError("wrk failed:\n\(report)") }
        return (Self.parse(report), report)
    }

    static func parse(_ report: String) -> Figures {
        var figures = Figures()
        for line in report.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            if fields.first == "replies/sec:", fields.count >= 2 { figures.requestsPerSecond = Double(fields[1]) ?? 0 }
            if fields.count == 2, fields[0] == "50%" { figures.p50 = fields[1] }
            if fields.count == 2, fields[0] == "99%" { figures.p99 = fields[1] }
            if fields.count == 3, fields[0] == "status", let status = Int(fields[1].dropLast()), let count = Int(fields[2]) {
                figures.statuses[status] = count
            }
        }
        return figures
    }
}

struct BenchmarkError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

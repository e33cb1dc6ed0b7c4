import BenchmarkSupport
import Foundation

/// One wrk run over a file of request bodies (see replay.lua): every body is sent once.
struct WrkRun {
    let url: String
    let bodiesPath: String
    let capturePath: String?
    /// Sent as `Authorization: Bearer …` with every request, when given.
    var bearer: String?
    /// How many bodies the file holds: wrk is given time enough to send them all (at 250/s or more).
    let count: Int
    var threads = 2
    var connections = 16

    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("replay.lua").path

    func run() throws -> (Wrk.Figures, String) {
        var arguments = [
            "-t\(threads)", "-c\(connections)", "-d\(max(10, count / 250))s", "--latency", "--timeout", "10s", "-s", Self.script, url, "--",
            bodiesPath, "\(threads)",
        ]
        arguments.append(capturePath ?? "")
        if let bearer { arguments.append(bearer) }
        return try Wrk.run(arguments)
    }
}

/// A flood running beside a measured run (see flood.lua): one address hammering `url` with an
/// unknown backend key until stopped, so a measured flow shows what the flood costs it.
final class WrkFlood {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("flood.lua").path
    private let process = Process()
    private let output = Pipe()

    /// Starts the flood for at most `seconds` (it is stopped before when `stop` is called).
    init(url: String, address: String, seconds: Int) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "wrk", "-t1", "-c8", "-d\(seconds)s", "--timeout", "10s", "-s", Self.script, url, "--", address,
            "bk_prod_" + String(repeating: "F", count: 43),
        ]
        process.standardOutput = output
        try process.run()
    }

    /// Stops the flood (wrk reports on SIGINT) and returns its replies by status.
    func stop() -> [Int: Int] {
        process.interrupt()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Wrk.parse(String(decoding: data, as: UTF8.self)).statuses
    }
}

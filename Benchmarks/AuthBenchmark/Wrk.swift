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

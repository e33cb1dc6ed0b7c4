import Foundation

/// Runs another program to its end.
public enum ChildProcess {
    /// Runs `executable arguments…` with `environment` added to this process's own, on a thread of
    /// its own (waiting for it must not hold the cooperative pool); returns its exit status and,
    /// with `capture`, its standard output. Without, it writes to this process's: a program that
    /// leaves daemons behind (which inherit the pipe) must not be captured.
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:], capture: Bool = false)
        async throws -> (status: Int32, output: String)
    {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result { try runBlocking(executable, arguments, environment: environment, capture: capture) })
            }
        }
    }

    private static func runBlocking(_ executable: String, _ arguments: [String], environment: [String: String], capture: Bool) throws -> (
        status: Int32, output: String
    ) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        let output = Pipe()
        if capture { process.standardOutput = output }
        try process.run()
        let data = capture ? output.fileHandleForReading.readDataToEndOfFile() : Data()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}

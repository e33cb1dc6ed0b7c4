import Foundation

/// The Python the test command prepared (with `rfc8785`, `cryptography` and `pyjwt`), for tests that check
/// Sesame's output with an independent implementation. Never skips: without it the test fails.
public enum TestPython {
    public static let variable = "SESAME_TEST_PYTHON"

    /// Runs `script` with `arguments` on a thread of its own, so a script that calls back into a
    /// service the test runs does not wait on a blocked cooperative thread; its exit status and
    /// standard output.
    public static func runDetached(_ script: String, _ arguments: [String]) async throws -> (status: Int32, output: String) {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try run(script, arguments) }) }
        }
    }

    /// Runs `script` with `arguments`; its exit status and standard output.
    public static func run(_ script: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        guard let python = ProcessInfo.processInfo.environment[variable], !python.isEmpty else {
            throw TestDatabase.Unavailable(description: "\(variable) is not set: this test checks with Python. Run it with ./sesame-dev test")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [script] + arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}

import ChildProcess
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The local runner (`./sesame-dev`) and the `sesame` CLI, driven as an operator would.
struct LocalSuite: Sendable {
    let runner: String
    let cli: String
    /// The `sesame-device` executable.
    let device: String
    let gateway: URL
    /// Extra environment for the runner's services and the CLI.
    let environment: [String: String]

    /// Runs `./sesame-dev ARGS`, failing on a non-zero exit; its output goes to our standard error.
    func runSuite(_ arguments: [String]) async throws {
        let status = try await run(runner, arguments, capture: false).status
        try expect(status == 0, "sesame-dev \(arguments.joined(separator: " ")) exited with \(status)")
    }

    /// Runs `./sesame-dev ARGS`; returns its exit status and what it wrote to both streams.
    func runSuiteCapturing(_ arguments: [String]) async throws -> (status: Int32, text: String) {
        let result = try await run(runner, arguments, capture: true, includingErrors: true)
        return (result.status, result.output)
    }

    /// Runs `sesame ARGS` against the gateway; returns standard output, failing on a non-zero exit.
    @discardableResult
    func sesame(_ arguments: [String], key: String? = nil, extra: [String: String] = [:]) async throws -> String {
        var environment = extra
        environment["SESAME_URL"] = gateway.absoluteString
        if let key { environment["SESAME_KEY"] = key }
        let result = try await run(cli, arguments, capture: true, environment: environment)
        try expect(result.status == 0, "sesame \(arguments.joined(separator: " ")) exited with \(result.status): \(result.output)")
        return result.output
    }

    /// Runs `sesame-device ARGS` (with `extra` in its environment); returns its exit status and standard output.
    func sesameDevice(_ arguments: [String], extra: [String: String] = [:]) async throws -> (status: Int32, output: String) {
        try await run(device, arguments, capture: true, environment: extra)
    }

    /// Runs a process to its end with the suite's environment (and `extra`).
    private func run(
        _ executable: String, _ arguments: [String], capture: Bool, includingErrors: Bool = false, environment extra: [String: String] = [:]
    ) async throws -> (status: Int32, output: String) {
        let environment = ProcessInfo.processInfo.environment.merging(self.environment) { $1 }.merging(extra) { $1 }
        return try await ChildProcess.run(executable, arguments, environment: environment, capture: capture, includingErrors: includingErrors)
    }
}

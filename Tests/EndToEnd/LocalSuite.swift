import ChildProcess
import DevSuite
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The local suite (driven directly, as `./sesame-dev` does), the `sesame` CLI and `sesame-device`,
/// used as an operator would.
struct LocalSuite: Sendable {
    let suite: DevelopmentSuite
    let cli: String
    /// The `sesame-device` executable.
    let device: String
    /// The README's quick start, built by URL (`Tests/AppByURL`'s QuickStart).
    let quickStart: String
    let gateway: URL
    /// Extra environment for the suite's services and the CLI.
    var environment: [String: String] { suite.extraEnvironment }

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

    /// Runs the README's quick start as an app with `info` as its Info.plist (written beside the
    /// executable, where Foundation looks for a flat bundle's) and `extra` in its environment.
    func runQuickStart(info: [String: String], extra: [String: String]) async throws -> (status: Int32, output: String) {
        let plist = URL(fileURLWithPath: quickStart).deletingLastPathComponent().appendingPathComponent("Info.plist")
        try PropertyListSerialization.data(fromPropertyList: info, format: .xml, options: 0).write(to: plist)
        return try await run(quickStart, [], capture: true, includingErrors: true, environment: extra)
    }

    /// Runs a process to its end with the suite's environment (and `extra`).
    private func run(
        _ executable: String, _ arguments: [String], capture: Bool, includingErrors: Bool = false, environment extra: [String: String] = [:]
    ) async throws -> (status: Int32, output: String) {
        let environment = ProcessInfo.processInfo.environment.merging(self.environment) { $1 }.merging(extra) { $1 }
        return try await ChildProcess.run(executable, arguments, environment: environment, capture: capture, includingErrors: includingErrors)
    }
}

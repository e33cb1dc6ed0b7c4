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

    /// Runs a process to its end on a thread of its own: waiting for it must not hold the
    /// cooperative pool.
    private func run(
        _ executable: String, _ arguments: [String], capture: Bool, includingErrors: Bool = false, environment extra: [String: String] = [:]
    ) async throws -> (status: Int32, output: String) {
        let environment = ProcessInfo.processInfo.environment.merging(self.environment) { $1 }.merging(extra) { $1 }
        return try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(
                    with: Result {
                        try Self.runBlocking(executable, arguments, capture: capture, includingErrors: includingErrors, environment: environment)
                    })
            }
        }
    }

    /// posix_spawn and waitpid: Foundation's `Process` did not notice its child's exit here
    /// (left a zombie, waited forever). Captured output goes through a file, so a chatty child
    /// never blocks on a full pipe.
    private static func runBlocking(
        _ executable: String, _ arguments: [String], capture: Bool, includingErrors: Bool, environment: [String: String]
    ) throws -> (status: Int32, output: String) {
        let outputPath = FileManager.default.temporaryDirectory.appendingPathComponent("sesame-e2e-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if capture {
            posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            if includingErrors { posix_spawn_file_actions_adddup2(&actions, 1, 2) }
        } else {
            posix_spawn_file_actions_adddup2(&actions, 2, 1)
        }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard spawned == 0 else { throw WalkFailure("could not start \(executable): \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let exitCode = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        let output = capture ? (FileManager.default.contents(atPath: outputPath) ?? Data()) : Data()
        return (exitCode, String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}

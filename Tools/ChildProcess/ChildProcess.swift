import Foundation

/// Runs another program to its end, for the local suite and the walk and soak that drive it.
public enum ChildProcess {
    /// Why a program could not be started.
    public struct SpawnFailure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Runs `executable arguments…` with exactly `environment`, on a thread of its own (waiting
    /// for it must not hold the cooperative pool); returns its exit status and, with `capture`,
    /// its standard output (and standard error too, with `includingErrors`). Without `capture`
    /// its output goes to this process's standard error.
    /// With `inheritOutput` (and no `capture`) its output goes where this process's does.
    /// `workingDirectory`, when given, is where it starts (by default where this process is).
    /// `started` is told the child's pid once it runs (for a caller that may signal it).
    public static func run(
        _ executable: String, _ arguments: [String], environment: [String: String], capture: Bool = false, includingErrors: Bool = false,
        inheritOutput: Bool = false, workingDirectory: String? = nil, started: (@Sendable (pid_t) -> Void)? = nil
    ) async throws -> (status: Int32, output: String) {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(
                    with: Result {
                        try runBlocking(
                            executable, arguments, capture: capture, includingErrors: includingErrors, inheritOutput: inheritOutput,
                            environment: environment, workingDirectory: workingDirectory, started: started)
                    })
            }
        }
    }

    /// posix_spawn and waitpid: Foundation's `Process` did not notice its child's exit here
    /// (left a zombie, waited forever). Captured output goes through a file, so a chatty child
    /// never blocks on a full pipe, and daemons it leaves behind hold no pipe open.
    private static func runBlocking(
        _ executable: String, _ arguments: [String], capture: Bool, includingErrors: Bool, inheritOutput: Bool,
        environment: [String: String], workingDirectory: String?, started: (@Sendable (pid_t) -> Void)?
    ) throws -> (status: Int32, output: String) {
        let outputPath = FileManager.default.temporaryDirectory.appendingPathComponent("sesame-child-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if capture {
            posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            if includingErrors { posix_spawn_file_actions_adddup2(&actions, 1, 2) }
        } else if !inheritOutput {
            posix_spawn_file_actions_adddup2(&actions, 2, 1)
        }
        // Glibc's posix_spawn_file_actions_addchdir_np is not visible to Swift here; coreutils'
        // env changes the directory, then becomes the program.
        let (executable, arguments) = workingDirectory.map { ("/usr/bin/env", ["-C", $0, executable] + arguments) } ?? (executable, arguments)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard spawned == 0 else { throw SpawnFailure(description: "could not start \(executable): \(String(cString: strerror(spawned)))") }
        started?(pid)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let exitCode = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        let output = capture ? (FileManager.default.contents(atPath: outputPath) ?? Data()) : Data()
        return (exitCode, String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}

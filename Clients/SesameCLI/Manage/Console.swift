import Foundation

/// Where commands write: standard output and error, or a buffer in tests.
final class Console: @unchecked Sendable {
    // @unchecked: the buffer is only touched by the one command a test runs, sequentially.
    private var captured: (out: String, error: String)?
    private let lock = NSLock()

    /// The console commands write to; tests bind their own with `$current.withValue`.
    @TaskLocal static var current = Console(capturing: false)

    init(capturing: Bool) {
        captured = capturing ? ("", "") : nil
    }

    /// A line on standard output (results).
    func out(_ line: String) {
        lock.withLock {
            if captured != nil { captured!.out += line + "\n" } else { print(line) }
        }
    }

    /// A line on standard error (messages for people).
    func error(_ line: String) {
        lock.withLock {
            if captured != nil {
                captured!.error += line + "\n"
            } else {
                FileHandle.standardError.write(Data((line + "\n").utf8))
            }
        }
    }

    /// What was written, when capturing.
    var output: (out: String, error: String) { lock.withLock { captured ?? ("", "") } }
}

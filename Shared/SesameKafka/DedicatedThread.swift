import Foundation
import Synchronization

/// Runs blocking librdkafka work on a thread of its own, so it never occupies the cooperative pool.
enum DedicatedThread {
    /// Runs `body` on a new thread named `name` and returns its result.
    static func run<Result: Sendable>(name: String, _ body: @escaping @Sendable () -> Result) async -> Result {
        await withCheckedContinuation { continuation in
            let thread = Thread {
                continuation.resume(returning: body())
            }
            thread.name = name
            thread.start()
        }
    }
}

/// A flag raised once, read from any thread (a loop's stop request, a consumer's readiness).
final class OneWayFlag: Sendable {
    private let raised = Atomic<Bool>(false)

    /// Asks the loop to stop.
    func raise() { raised.store(true, ordering: .releasing) }

    /// Whether the loop should stop.
    var isRaised: Bool { raised.load(ordering: .acquiring) }
}

import Foundation
import Synchronization
import Testing

@testable import SesameStorage

/// Awaits that end only when resumed by the test, cancelled or not: what PostgresNIO does with a
/// query written to a connection the server has just closed.
private final class NeverAnswered: Sendable {
    private let waiting = Mutex<[CheckedContinuation<Void, Never>]>([])

    func wait() async {
        await withCheckedContinuation { continuation in waiting.withLock { $0.append(continuation) } }
    }

    /// Ends every wait, so the test leaves no task behind.
    func release() {
        for continuation in waiting.withLock({ waiting in defer { waiting = [] }; return waiting }) { continuation.resume() }
    }
}

private struct OperationFailed: Error, Equatable {}

/// A counter the closures under test share.
private final class Counter: Sendable {
    private let count = Atomic<Int>(0)
    func add() { count.add(1, ordering: .relaxed) }
    var value: Int { count.load(ordering: .relaxed) }
}

@Suite("An operation its caller can stop waiting for", .timeLimit(.minutes(1)))
struct AbandonableOperationTests {
    @Test("withTimeout answers at the limit even when the operation ignores cancellation")
    func timeoutAbandonsAnOperationThatNeverEnds() async throws {
        let never = NeverAnswered()
        defer { never.release() }
        let started = ContinuousClock.now
        await #expect(throws: TimeoutError.self) {
            try await withTimeout(.milliseconds(200)) { await never.wait() }
        }
        #expect(ContinuousClock.now - started < .seconds(2))
    }

    @Test("an operation that ends in time gives its value or its own error")
    func resultsPassThrough() async throws {
        #expect(try await withTimeout(.seconds(5)) { 42 } == 42)
        await #expect(throws: OperationFailed.self) {
            try await withTimeout(.seconds(5)) { () async throws -> Int in throw OperationFailed() }
        }
    }

    @Test("a reason to give up, once it appears, ends the wait with that reason")
    func giveUpEndsTheWait() async throws {
        let never = NeverAnswered()
        defer { never.release() }
        let closed = Counter()
        let started = ContinuousClock.now
        let closing = Task {
            try await Task.sleep(for: .milliseconds(150))
            closed.add()
        }
        await #expect(throws: ConnectionClosedError.self) {
            try await AbandonableOperation.run(
                { await never.wait() }, limit: .seconds(30), checkInterval: .milliseconds(20),
                giveUp: { closed.value > 0 ? ConnectionClosedError() : nil })
        }
        #expect(ContinuousClock.now - started < .seconds(5))
        try await closing.value
    }

    @Test("the caller's cancellation is answered at once, whatever the operation does")
    func callerCancellation() async throws {
        let never = NeverAnswered()
        defer { never.release() }
        let waiting = Task { try await withTimeout(.seconds(30)) { await never.wait() } }
        try await Task.sleep(for: .milliseconds(50))
        let started = ContinuousClock.now
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        #expect(ContinuousClock.now - started < .seconds(2))
    }

    @Test("an operation that ends first cancels the watcher: no timer outlives it")
    func finishedOperationCancelsItsWatcher() async throws {
        let asked = Counter()
        let value = try await AbandonableOperation.run(
            { "done" }, limit: .seconds(30), checkInterval: .milliseconds(10),
            giveUp: { asked.add(); return nil })
        #expect(value == "done")
        let askedThen = asked.value
        try await Task.sleep(for: .milliseconds(100))
        #expect(asked.value == askedThen)
    }
}

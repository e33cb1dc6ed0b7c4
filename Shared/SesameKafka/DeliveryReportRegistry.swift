import Synchronization

/// The outcome of sending one message.
public typealias KafkaDeliveryResult = Result<KafkaDeliveryReceipt, KafkaError>

/// Matches librdkafka delivery reports to the callers waiting for them, by an opaque id.
///
/// A caller registers a completion under a fresh id before producing; the delivery-report
/// callback (on the polling thread) runs it. On shutdown every completion still registered is
/// failed, so no caller waits forever.
final class DeliveryReportRegistry: Sendable {
    typealias Completion = @Sendable (KafkaDeliveryResult) -> Void

    private struct State {
        var nextID: UInt = 1
        var waiting: [UInt: Completion] = [:]
    }

    private let state = Mutex(State())

    /// Registers `completion` and returns its id (never 0, so a report without an opaque is ignored).
    func register(_ completion: @escaping Completion) -> UInt {
        state.withLock { state in
            let id = state.nextID
            state.nextID &+= 1
            if state.nextID == 0 { state.nextID = 1 }
            state.waiting[id] = completion
            return id
        }
    }

    /// Runs the completion registered under `id`, if it is still waiting.
    func complete(_ id: UInt, with result: KafkaDeliveryResult) {
        let completion = state.withLock { $0.waiting.removeValue(forKey: id) }
        completion?(result)
    }

    /// Fails every completion still registered.
    func failAll(with error: KafkaError) {
        let completions = state.withLock { state in
            defer { state.waiting.removeAll() }
            return Array(state.waiting.values)
        }
        for completion in completions { completion(.failure(error)) }
    }
}

/// Gathers the delivery results of one batch and resumes its caller once all are in.
final class BatchDeliveryResults: Sendable {
    private struct State {
        var results: [KafkaDeliveryResult?]
        var remaining: Int
    }

    private let state: Mutex<State>
    private let continuation: CheckedContinuation<[KafkaDeliveryResult], Never>

    /// Waits for `count` results (count > 0).
    init(count: Int, continuation: CheckedContinuation<[KafkaDeliveryResult], Never>) {
        self.state = Mutex(State(results: Array(repeating: nil, count: count), remaining: count))
        self.continuation = continuation
    }

    /// Records the result of message `index`; the last one resumes the caller.
    func record(_ result: KafkaDeliveryResult, at index: Int) {
        let finished: [KafkaDeliveryResult]? = state.withLock { state in
            guard state.results[index] == nil else { return nil }
            state.results[index] = result
            state.remaining -= 1
            return state.remaining == 0 ? state.results.map { $0! } : nil
        }
        if let finished { continuation.resume(returning: finished) }
    }
}

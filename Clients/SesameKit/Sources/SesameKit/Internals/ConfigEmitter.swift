import Foundation

/// The live config of one scope, shared by every `updates(scope:)` sequence that iterates it: one
/// follower (one connection to Sesame's notices) however many observers. A new observer gets the
/// last config at once; only configs that differ from the last are yielded; it finishes once, for
/// all. The last observer to leave stops the follower, and the next `updates(scope:)` starts anew.
final class ConfigEmitter: Sendable {
    private struct State {
        var observers: [UUID: AsyncThrowingStream<SesameConfig, any Error>.Continuation] = [:]
        var last: SesameConfig?
        var finished = false
        var follower: Task<Void, Never>?
    }

    private let state = Locked(State())

    var isFinished: Bool { state.withLock { $0.finished } }

    /// Adds an observer, which gets the last config at once; false when this emitter has finished.
    func add(_ id: UUID, _ continuation: AsyncThrowingStream<SesameConfig, any Error>.Continuation) -> Bool {
        state.withLock { state in
            guard !state.finished else { return false }
            state.observers[id] = continuation
            // Yielded under the lock, so it cannot pass a newer config being emitted meanwhile.
            if let last = state.last { continuation.yield(last) }
            return true
        }
    }

    /// Removes an observer; the last one out stops the follower.
    func remove(_ id: UUID) {
        let follower = state.withLock { state -> Task<Void, Never>? in
            state.observers[id] = nil
            guard state.observers.isEmpty, !state.finished else { return nil }
            state.finished = true
            return state.follower
        }
        follower?.cancel()
    }

    /// The task that follows Sesame for the observers; cancelled at once if they have all left.
    func start(_ follower: Task<Void, Never>) {
        let alreadyLeft = state.withLock { state -> Bool in
            state.follower = follower
            return state.finished && state.observers.isEmpty
        }
        if alreadyLeft { follower.cancel() }
    }

    func emit(_ config: SesameConfig) {
        state.withLock { state in
            guard !state.finished, state.last != config else { return }
            state.last = config
            for observer in state.observers.values { observer.yield(config) }
        }
    }

    func finish(throwing error: (any Error)?) {
        let observers = state.withLock { state -> [AsyncThrowingStream<SesameConfig, any Error>.Continuation] in
            guard !state.finished else { return [] }
            state.finished = true
            defer { state.observers.removeAll() }
            return Array(state.observers.values)
        }
        // Outside the lock: finishing runs each observer's termination, which removes it.
        for observer in observers { observer.finish(throwing: error) }
    }
}

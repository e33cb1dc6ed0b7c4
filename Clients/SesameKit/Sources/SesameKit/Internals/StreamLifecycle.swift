import Foundation

/// Where the app is in its lifecycle, as the live-update stream needs it: iOS defuncts a suspended
/// app's sockets, so the stream is closed when the app goes to the background and opened again at
/// once when it returns (its backoff starting over), as Firebase's realtime client does.
final class StreamLifecycle: Sendable {
    private struct State {
        var inBackground = false
        /// Counts returns to the foreground: a connection or a backoff that saw another one is stale.
        var foregrounds = 0
        var connection: Task<SesameClient.NoticeStreamEnd, Never>?
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Locked(State())

    /// The app went to the background: the open connection is closed.
    func enterBackground() {
        let connection = state.withLock { state -> Task<SesameClient.NoticeStreamEnd, Never>? in
            state.inBackground = true
            return state.connection
        }
        connection?.cancel()
    }

    /// The app came back: whoever waits for the foreground goes on.
    func enterForeground() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.inBackground = false
            state.foregrounds += 1
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    var inBackground: Bool { state.withLock { $0.inBackground } }
    var foregrounds: Int { state.withLock { $0.foregrounds } }

    /// Returns at once in the foreground, else when the app returns to it (or the task is cancelled).
    func untilForeground() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let waiting = state.withLock { state -> Bool in
                    guard state.inBackground, !Task.isCancelled else { return false }
                    state.waiters.append(continuation)
                    return true
                }
                if !waiting { continuation.resume() }
            }
        } onCancel: {
            enterForegroundWaitersOnly()
        }
    }

    /// Releases the waiters without changing the state (a cancelled follower must not hang).
    private func enterForegroundWaitersOnly() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Runs `connect` as the open connection, closed at once if the app is (or goes) in the background.
    func connect(_ connect: @escaping @Sendable () async -> SesameClient.NoticeStreamEnd) async -> SesameClient.NoticeStreamEnd {
        let connection = Task { await connect() }
        let background = state.withLock { state -> Bool in
            state.connection = connection
            return state.inBackground
        }
        if background { connection.cancel() }
        return await withTaskCancellationHandler {
            let end = await connection.value
            state.withLock { if $0.connection == connection { $0.connection = nil } }
            return end
        } onCancel: {
            connection.cancel()
        }
    }
}

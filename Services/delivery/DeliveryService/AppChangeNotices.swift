import Metrics
import ServiceLifecycle
import Synchronization

/// Tells the open live-config streams (`GET /v1/config/updates`) of an app that its state changed,
/// and every stream, on a steady tick, that it is time for a heartbeat and a look at its token.
///
/// A stream subscribes with its app id and gets an `AsyncStream` that holds at most one notice
/// (a burst of changes reads as one: the stream rereads the app's state anyway). One ticker serves
/// every stream, so an idle stream costs a dictionary entry and its connection, not a timer.
final class AppChangeNotices: Service, Sendable {
    /// What woke a stream.
    enum Notice: Sendable {
        /// The app's state was replaced: reread it.
        case changed
        /// The steady tick: send a heartbeat, check the token's expiry.
        case tick
    }

    /// One stream's subscription; `cancel` when the stream ends.
    struct Subscription: Sendable {
        let notices: AsyncStream<Notice>
        fileprivate let appID: String
        fileprivate let id: UInt64
    }

    private struct Subscribers {
        var byApp: [String: [UInt64: AsyncStream<Notice>.Continuation]] = [:]
        var nextID: UInt64 = 0
        var count = 0
    }

    private let subscribers = Mutex(Subscribers())
    /// `sesame_delivery_config_streams`: the live-config streams open on this replica.
    private static let openStreams = Gauge(label: "sesame_delivery_config_streams")
    /// How often every stream is ticked.
    let tickInterval: Duration

    init(tickInterval: Duration = .seconds(10)) {
        self.tickInterval = tickInterval
    }

    /// How many streams are open.
    var count: Int { subscribers.withLock { $0.count } }

    /// Notices for `appID`'s stream, starting now.
    func subscribe(_ appID: String) -> Subscription {
        let (notices, continuation) = AsyncStream.makeStream(of: Notice.self, bufferingPolicy: .bufferingNewest(1))
        let id = subscribers.withLock { subscribers in
            subscribers.nextID += 1
            subscribers.byApp[appID, default: [:]][subscribers.nextID] = continuation
            subscribers.count += 1
            Self.openStreams.record(subscribers.count)
            return subscribers.nextID
        }
        return Subscription(notices: notices, appID: appID, id: id)
    }

    /// Ends `subscription`'s notices.
    func cancel(_ subscription: Subscription) {
        let continuation = subscribers.withLock { subscribers -> AsyncStream<Notice>.Continuation? in
            guard let removed = subscribers.byApp[subscription.appID]?.removeValue(forKey: subscription.id) else { return nil }
            if subscribers.byApp[subscription.appID]?.isEmpty == true { subscribers.byApp[subscription.appID] = nil }
            subscribers.count -= 1
            Self.openStreams.record(subscribers.count)
            return removed
        }
        continuation?.finish()
    }

    /// Wakes the streams of `appIDs`.
    func changed(_ appIDs: some Sequence<String>) {
        let continuations = subscribers.withLock { subscribers in appIDs.flatMap { subscribers.byApp[$0]?.values ?? [:].values } }
        for continuation in continuations { continuation.yield(.changed) }
    }

    /// Ticks every stream, every `tickInterval`, until the service group stops.
    func run() async throws {
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            try? await cancelWhenGracefulShutdown { [tickInterval] in try await Task.sleep(for: tickInterval) }
            let continuations = subscribers.withLock { $0.byApp.values.flatMap(\.values) }
            for continuation in continuations { continuation.yield(.tick) }
        }
        // Shutting down: every stream ends, so the server's graceful shutdown is not held open.
        let continuations = subscribers.withLock { $0.byApp.values.flatMap(\.values) }
        for continuation in continuations { continuation.finish() }
    }
}

import HTTPTypes
import Metrics
import SesameHTTP
import ServiceLifecycle
import Synchronization

/// Tells the open live-config streams (`GET /v1/config/updates`) of an app that its state changed,
/// and every stream, on a steady tick, that it is time for a heartbeat and a look at its token.
///
/// A stream subscribes with its app id and a listener, called synchronously from whatever thread
/// noticed (it must not block: a stream parked on an event loop hops there; a stream in a task
/// reads an `AsyncStream`, `notices(for:)`). One ticker serves every stream, so an idle stream
/// costs a dictionary entry and its connection, not a timer.
final class AppChangeNotices: Service, Sendable {
    /// What woke a stream.
    enum Notice: Sendable {
        /// The app's state was replaced: reread it.
        case changed
        /// The steady tick: send a heartbeat, check the token's expiry.
        case tick
        /// The service is shutting down: end the stream, so the server's graceful shutdown is not held open.
        case shutdown
    }

    /// Hears a stream's notices; called from any thread, must not block.
    typealias Listener = @Sendable (Notice) -> Void

    /// One stream's subscription; `cancel` when the stream ends.
    struct Subscription: Sendable {
        fileprivate let appID: String
        fileprivate let subject: String
        fileprivate let id: UInt64
    }

    private struct Subscribers {
        var byApp: [String: [UInt64: Listener]] = [:]
        /// Open streams per install (an access token's subject).
        var bySubject: [String: Int] = [:]
        var nextID: UInt64 = 0
        var count = 0
    }

    private let subscribers = Mutex(Subscribers())
    /// `sesame_delivery_config_streams`: the live-config streams open on this replica.
    private static let openStreams = Gauge(label: "sesame_delivery_config_streams")
    /// How often every stream is ticked.
    let tickInterval: Duration

    /// How many streams one install may hold open on this replica: an app needs one; a few more
    /// cover reconnects overlapping the streams they replace, and app extensions.
    let streamsPerInstall: Int

    init(tickInterval: Duration = .seconds(10), streamsPerInstall: Int = 8) {
        self.tickInterval = tickInterval
        self.streamsPerInstall = streamsPerInstall
    }

    /// How many streams are open.
    var count: Int { subscribers.withLock { $0.count } }

    /// Refuses a new stream to an install (`subject`) holding `streamsPerInstall` already: each
    /// costs the replica a connection and memory for as long as its token lives. Checked before
    /// the stream is answered, counted when it subscribes: streams opened at the same instant may
    /// pass together, as many as the install's rate limit lets through.
    func admit(subject: String) throws {
        let open = subscribers.withLock { $0.bySubject[subject] ?? 0 }
        if open >= streamsPerInstall {
            throw APIError(
                .tooManyRequests, code: "too_many_streams",
                message: "This install has \(open) live-config streams open here already; close one before opening another.",
                headers: [.retryAfter: "60"])
        }
    }

    /// Calls `listener` with `appID`'s notices, starting now, until `cancel`; the stream counts
    /// against its install (`subject`).
    func subscribe(_ appID: String, subject: String, listener: @escaping Listener) -> Subscription {
        let id = subscribers.withLock { subscribers in
            subscribers.nextID += 1
            subscribers.byApp[appID, default: [:]][subscribers.nextID] = listener
            subscribers.bySubject[subject, default: 0] += 1
            subscribers.count += 1
            Self.openStreams.record(subscribers.count)
            return subscribers.nextID
        }
        return Subscription(appID: appID, subject: subject, id: id)
    }

    /// `appID`'s notices as an `AsyncStream`, starting now, holding at most one (a burst of
    /// changes reads as one: the stream rereads the app's state anyway); it finishes at shutdown.
    func notices(for appID: String, subject: String) -> (Subscription, AsyncStream<Notice>) {
        let (notices, continuation) = AsyncStream.makeStream(of: Notice.self, bufferingPolicy: .bufferingNewest(1))
        let subscription = subscribe(appID, subject: subject) { notice in
            if notice == .shutdown { continuation.finish() } else { continuation.yield(notice) }
        }
        continuation.onTermination = { [weak self] _ in self?.cancel(subscription) }
        return (subscription, notices)
    }

    /// Ends `subscription`'s notices.
    func cancel(_ subscription: Subscription) {
        subscribers.withLock { subscribers in
            guard subscribers.byApp[subscription.appID]?.removeValue(forKey: subscription.id) != nil else { return }
            if subscribers.byApp[subscription.appID]?.isEmpty == true { subscribers.byApp[subscription.appID] = nil }
            subscribers.bySubject[subscription.subject, default: 1] -= 1
            if subscribers.bySubject[subscription.subject] == 0 { subscribers.bySubject[subscription.subject] = nil }
            subscribers.count -= 1
            Self.openStreams.record(subscribers.count)
        }
    }

    /// Ends `subscription`'s stream now: it hears `.shutdown` (its server is stopping).
    func end(_ subscription: Subscription) {
        let listener = subscribers.withLock { $0.byApp[subscription.appID]?[subscription.id] }
        cancel(subscription)
        listener?(.shutdown)
    }

    /// Wakes the streams of `appIDs`.
    func changed(_ appIDs: some Sequence<String>) {
        let listeners = subscribers.withLock { subscribers in appIDs.flatMap { subscribers.byApp[$0]?.values ?? [:].values } }
        for listener in listeners { listener(.changed) }
    }

    /// Ticks every stream, every `tickInterval`, until the service group stops: a tenth of them
    /// each tenth of the interval, so 10,000 streams do not all wake in the same millisecond
    /// (and delay the requests beside them on the event loops).
    func run() async throws {
        var slice: UInt64 = 0
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            try? await cancelWhenGracefulShutdown { [tickInterval] in try await Task.sleep(for: tickInterval / Int(Self.tickSlices)) }
            slice = (slice + 1) % Self.tickSlices
            let listeners = subscribers.withLock { subscribers in
                subscribers.byApp.values.flatMap { $0.lazy.filter { $0.key % Self.tickSlices == slice }.map(\.value) }
            }
            for listener in listeners { listener(.tick) }
        }
        let listeners = subscribers.withLock { $0.byApp.values.flatMap(\.values) }
        for listener in listeners { listener(.shutdown) }
    }

    /// Into how many slices the streams are cut for their ticks.
    private static let tickSlices: UInt64 = 10
}

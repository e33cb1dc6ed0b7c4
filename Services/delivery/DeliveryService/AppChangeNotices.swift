import HTTPTypes
import JWTKit
import Metrics
import SesameDomain
import SesameHTTP
import SesameTokens
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

    /// Where a stream's notices go once it is ready to hear them: the event loop's fast path
    /// subscribes while it admits the request, before the parked stream exists. Notices before
    /// `connect` are dropped: the stream reads the app's state when it opens, after them.
    final class Relay: Sendable {
        private let target = Mutex<Listener?>(nil)
        init() {}
        func connect(_ listener: @escaping Listener) { target.withLock { $0 = listener } }
        func hear(_ notice: Notice) { target.withLock { $0 }?(notice) }
    }

    /// One stream's subscription; `cancel` when the stream ends.
    struct Subscription: Sendable {
        fileprivate let appID: String
        fileprivate let holder: String
        fileprivate let address: String
        fileprivate let id: UInt64
    }

    /// Who a stream counts against: the install (an attested or debug token's subject) and the
    /// client address (an IPv6 client's /64). An unattested token's subject is new at each
    /// exchange, so its streams count against the address as their install.
    struct Opener: Sendable {
        let appID: String
        let holder: String
        let address: String

        init(claims: AccessTokenClaims, address: String) {
            appID = claims.appID
            holder = claims.trustTier == .unattested ? "address:" + address : claims.subject.value
            self.address = address
        }
    }

    /// How many streams may be open on this replica: per install, per client address, in all.
    struct Limits: Sendable {
        /// An app needs one; a few more cover reconnects overlapping the streams they replace, and
        /// app extensions (`SESAME_STREAMS_PER_INSTALL`).
        var perInstall = 8
        /// Many devices share an address behind carrier-grade NAT (`SESAME_STREAMS_PER_ADDRESS`).
        var perAddress = 256
        /// What one replica holds, well within its descriptors (`SESAME_STREAMS_PER_REPLICA`).
        var perReplica = 20_000
    }

    private struct Subscribers {
        var byApp: [String: [UInt64: Listener]] = [:]
        /// Open streams per install (see `Opener.holder`).
        var byHolder: [String: Int] = [:]
        /// Open streams per client address.
        var byAddress: [String: Int] = [:]
        var nextID: UInt64 = 0
        var count = 0
    }

    private let subscribers = Mutex(Subscribers())
    /// `sesame_delivery_config_streams`: the live-config streams open on this replica.
    private static let openStreams = Gauge(label: "sesame_delivery_config_streams")
    /// `sesame_delivery_config_streams_refused_total{limit}`: streams refused at a limit.
    private static let refusals = ["install", "address", "replica"].reduce(into: [String: Counter]()) {
        $0[$1] = Counter(label: "sesame_delivery_config_streams_refused_total", dimensions: [("limit", $1)])
    }
    /// How often every stream is ticked.
    let tickInterval: Duration
    let limits: Limits

    init(tickInterval: Duration = .seconds(10), limits: Limits = Limits()) {
        self.tickInterval = tickInterval
        self.limits = limits
    }

    /// How many streams are open.
    var count: Int { subscribers.withLock { $0.count } }

    /// Admits a stream and calls `listener` with its app's notices, starting now, until `cancel`.
    /// The limits are checked and the stream counted in one step, so a burst of opens at the same
    /// instant cannot pass a limit together: past the install's or the address's, `429
    /// too_many_streams`; past the replica's, `503 too_many_streams` (another replica may have room).
    func subscribe(_ opener: Opener, listener: @escaping Listener) throws -> Subscription {
        let outcome: Result<UInt64, APIError> = subscribers.withLock { subscribers in
            if subscribers.count >= limits.perReplica {
                Self.refusals["replica"]?.increment()
                return .failure(APIError(
                    .serviceUnavailable, code: DeliveryErrorCode.tooManyStreams,
                    message: "This replica holds as many live-config streams as it may; try again shortly.", headers: [.retryAfter: "\(retryAfter)"]))
            }
            let install = subscribers.byHolder[opener.holder] ?? 0
            let address = subscribers.byAddress[opener.address] ?? 0
            if install >= limits.perInstall || address >= limits.perAddress {
                let (what, open) = install >= limits.perInstall ? ("install", install) : ("address", address)
                Self.refusals[what]?.increment()
                return .failure(APIError(
                    .tooManyRequests, code: DeliveryErrorCode.tooManyStreams,
                    message: "This \(what) has \(open) live-config streams open here already; close one before opening another.",
                    headers: [.retryAfter: "\(retryAfter)"]))
            }
            subscribers.nextID += 1
            subscribers.byApp[opener.appID, default: [:]][subscribers.nextID] = listener
            subscribers.byHolder[opener.holder] = install + 1
            subscribers.byAddress[opener.address] = address + 1
            subscribers.count += 1
            Self.openStreams.record(subscribers.count)
            return .success(subscribers.nextID)
        }
        let id = try outcome.get()
        return Subscription(appID: opener.appID, holder: opener.holder, address: opener.address, id: id)
    }

    /// When a refused stream should try again: a stream closed by its client is noticed at its
    /// next heartbeat at the latest (one tick), so its place is free by then.
    private var retryAfter: Int { Int(tickInterval.components.seconds) + 2 }

    /// Admits a stream (as `subscribe`) whose notices are read as an `AsyncStream`, holding at most
    /// one (a burst of changes reads as one: the stream rereads the app's state anyway); it
    /// finishes at shutdown. The stream is counted until the `AsyncStream` is cancelled, finished
    /// or released, so a response never written gives its place back.
    func notices(for opener: Opener) throws -> (Subscription, AsyncStream<Notice>) {
        let (notices, continuation) = AsyncStream.makeStream(of: Notice.self, bufferingPolicy: .bufferingNewest(1))
        let subscription = try subscribe(opener) { notice in
            if notice == .shutdown { continuation.finish() } else { continuation.yield(notice) }
        }
        continuation.onTermination = { [weak self] _ in self?.cancel(subscription) }
        return (subscription, notices)
    }

    /// Ends `subscription`'s notices and frees its place.
    func cancel(_ subscription: Subscription) {
        subscribers.withLock { subscribers in
            guard subscribers.byApp[subscription.appID]?.removeValue(forKey: subscription.id) != nil else { return }
            if subscribers.byApp[subscription.appID]?.isEmpty == true { subscribers.byApp[subscription.appID] = nil }
            Self.release(subscription.holder, in: &subscribers.byHolder)
            Self.release(subscription.address, in: &subscribers.byAddress)
            subscribers.count -= 1
            Self.openStreams.record(subscribers.count)
        }
    }

    private static func release(_ key: String, in counts: inout [String: Int]) {
        counts[key, default: 1] -= 1
        if counts[key] == 0 { counts[key] = nil }
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

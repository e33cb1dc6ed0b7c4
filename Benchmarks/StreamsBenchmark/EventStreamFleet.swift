import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOPosix
import SesameKit
import Synchronization

/// Many open `GET /v1/config/updates` streams, each a plain NIO connection on one event loop (so
/// the fleet's own cost stays small beside delivery's), recording when each event arrived.
final class EventStreamFleet: Sendable {
    /// One event seen on one stream.
    struct Arrival: Sendable {
        let stream: Int
        let event: String
        let id: String
        let at: ContinuousClock.Instant
    }

    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private let arrivals = Mutex<[Arrival]>([])
    private let channels = Mutex<[any Channel]>([])
    private let ended = Atomic<Int>(0)

    /// Opens `count` streams to `port`, at most `inFlight` connecting at once, stream `i` with
    /// `tokens[i % tokens.count]`.
    func open(count: Int, port: Int, path: String, tokens: [String], inFlight: Int = 200) async throws {
        try await withThrowingTaskGroup(of: Void.self) { connects in
            for stream in 0..<count {
                if stream >= inFlight { try await connects.next() }
                connects.addTask { try await self.connect(stream: stream, port: port, path: path, token: tokens[stream % tokens.count]) }
            }
            try await connects.waitForAll()
        }
    }

    private func connect(stream: Int, port: Int, path: String, token: String) async throws {
        let channel = try await ClientBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(EventStreamReader(stream: stream, fleet: self))
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: path)
        head.headers.add(name: "Host", value: "127.0.0.1:\(port)")
        head.headers.add(name: "Authorization", value: "Bearer \(token)")
        head.headers.add(name: "Accept", value: "text/event-stream")
        channel.write(HTTPClientRequestPart.head(head), promise: nil)
        try await channel.writeAndFlush(HTTPClientRequestPart.end(nil))
        channels.withLock { $0.append(channel) }
    }

    fileprivate func record(_ arrival: Arrival) { arrivals.withLock { $0.append(arrival) } }
    fileprivate func streamEnded() { ended.add(1, ordering: .relaxed) }

    /// How many streams the server has ended.
    var endedCount: Int { ended.load(ordering: .relaxed) }

    /// Per stream, the first arrival of `event` (with `id`, when given) at or after `since`.
    func firstArrivals(of event: String, id: String? = nil, since: ContinuousClock.Instant) -> [Int: ContinuousClock.Instant] {
        arrivals.withLock { arrivals in
            var first: [Int: ContinuousClock.Instant] = [:]
            for arrival in arrivals where arrival.event == event && arrival.at >= since && (id == nil || arrival.id == id) {
                if first[arrival.stream] == nil { first[arrival.stream] = arrival.at }
            }
            return first
        }
    }

    /// Waits until `count` streams have seen `event` (with `id`) since `since`; returns their arrival times.
    func waitForAll(
        _ count: Int, event: String, id: String? = nil, since: ContinuousClock.Instant, timeout: Duration
    ) async throws -> [ContinuousClock.Instant] {
        let clock = ContinuousClock()
        while true {
            let first = firstArrivals(of: event, id: id, since: since)
            if first.count >= count { return Array(first.values) }
            guard clock.now - since < timeout else {
                throw FleetFailure("\(first.count) of \(count) streams saw \(event) within \(timeout)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Closes every stream still open and stops the event loop.
    func close() async throws {
        let open = channels.withLock { channels in defer { channels.removeAll() } ; return channels }
        for channel in open { try? await channel.close() }
        try await group.shutdownGracefully()
    }
}

struct FleetFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Reads one stream's server-sent events (the HTTP decoder has removed the chunking) and records
/// each as it completes.
private final class EventStreamReader: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart

    let stream: Int
    let fleet: EventStreamFleet
    private var parser = ServerSentEventParser()
    private var status: HTTPResponseStatus?

    init(stream: Int, fleet: EventStreamFleet) {
        self.stream = stream
        self.fleet = fleet
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            status = head.status
            if head.status != .ok {
                fleet.record(.init(stream: stream, event: "status \(head.status.code)", id: "", at: .now))
            }
        case .body(let buffer):
            let now = ContinuousClock.now
            for event in parser.feed(Data(buffer: buffer)) {
                fleet.record(.init(stream: stream, event: event.event, id: event.id ?? "", at: now))
            }
        case .end:
            fleet.streamEnded()
        }
    }
}

import Dispatch
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Metrics
import NIOCore
import NIOHTTPTypes
import Synchronization

/// A route answered on the connection's event loop, before Hummingbird's router, when everything
/// its answer needs is already in memory.
///
/// Why: a request through the router costs a hop from NIO's event loop to a Swift task and back,
/// a request context and the middleware chain, which together cost `GET /v1/config` about half its
/// throughput (`./sesame-dev bench delivery`). The answer of a route served from memory needs none
/// of them. A fast path is an optimisation, never a second implementation: the route it shadows
/// stays registered with the router, and the fast path passes it every request it cannot answer
/// without waiting (a token not yet verified, anything unusual). Both build their answers with the
/// same code.
public protocol FastPathRoute: Sendable {
    /// The exact path it answers (`/v1/config`); its queries are the route's business.
    var path: String { get }

    /// The answer to a `GET` of `path` without a body, or nil to leave it to the router. Must not
    /// block: it runs on the event loop. Nil only before it has spent anything (a rate limit), so
    /// that the router's answer does not spend it twice.
    func answer(_ request: FastPathRequest) -> FastPathAnswer?
}

/// What a fast path sees of a request.
public struct FastPathRequest: Sendable {
    /// The request line and headers.
    public let head: HTTPRequest
    /// The peer's IP address (a gateway's, behind one).
    public let peer: String?
}

/// A fast path's answer: a response, a refusal rendered as the router's middleware renders it, or
/// a stream.
public enum FastPathAnswer: Sendable {
    case response(status: HTTPResponse.Status, headers: HTTPFields, body: ByteBuffer)
    case refusal(APIError)
    /// A `200` whose body the route writes for as long as it likes (server-sent events): the handler
    /// writes the head (chunked), then calls `open` on the connection's event loop with the body's
    /// writer. The connection carries nothing else until the route finishes it or the client leaves.
    case stream(headers: HTTPFields, open: @Sendable (FastPathStreamWriter) -> Void)
}

/// Answers the `FastPathRoute`s' requests it can, in the HTTP/1 pipeline between the HTTP codec
/// and Hummingbird; passes everything else on untouched.
///
/// Its answers carry what the router's would: `X-Request-Id`, `Date`, `Server`, `Content-Length`, the
/// access log line and the request metrics. Answers stay in request order: while a request it
/// passed on has not been answered, it passes on the ones behind it too.
public final class FastPathHandler: ChannelDuplexHandler, RemovableChannelHandler {
    public typealias InboundIn = HTTPRequestPart
    public typealias InboundOut = HTTPRequestPart
    public typealias OutboundIn = HTTPResponsePart
    public typealias OutboundOut = HTTPResponsePart

    private let routes: [String: any FastPathRoute]
    private let serverName: String?
    private let logger: Logger
    private let metrics: RequestMetrics
    /// `sesame_http_fast_path_answers_total{http.route}`: how much of a route's traffic the fast
    /// path answers (the rest is in `hb_requests` too).
    private let answered: [String: Counter]
    /// Requests passed to the router whose response has not ended yet.
    private var passedOnInFlight = 0
    /// The stream this connection carries, if a `.stream` answer opened one.
    private var stream: OpenStream?
    /// Set between `handlerAdded` and `handlerRemoved`: a stream's writes arrive from outside the pipeline.
    private var context: ChannelHandlerContext?
    /// The request being read: answered here (with its answer and start), or passed on.
    private var current: Current = .none
    private var needsFlush = false
    /// The connection's peer address, read at its first request: the channel's address is behind
    /// a lock and formatted anew at every read.
    private var peer: String??

    private enum Current {
        case none
        case passedOn
        case answered(FastPathAnswer, method: HTTPRequest.Method, route: String, started: UInt64, clock: ContinuousClock.Instant)
    }

    private struct OpenStream {
        /// Called once when the stream ends, whoever ends it.
        var onClose: [@Sendable () -> Void] = []
        /// A request arrived behind the stream: it cannot be answered in order, so the connection
        /// closes once the stream ends.
        var requestBehind = false
    }

    /// - Parameters:
    ///   - routes: the routes answered here.
    ///   - serverName: the `Server` header the application sets on every response.
    ///   - metrics: the handles the request metrics middleware records with.
    public init(routes: [any FastPathRoute], serverName: String?, logger: Logger, metrics: RequestMetrics) {
        self.routes = Dictionary(routes.map { ($0.path, $0) }, uniquingKeysWith: { first, _ in first })
        self.serverName = serverName
        self.logger = logger
        self.metrics = metrics
        answered = self.routes.mapValues { Counter(label: "sesame_http_fast_path_answers_total", dimensions: [("http.route", $0.path)]) }
    }

    public func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        streamClosed()
        self.context = nil
    }

    public func channelInactive(context: ChannelHandlerContext) {
        streamClosed()
        context.fireChannelInactive()
    }

    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // The server is shutting down gracefully: end an open stream's body cleanly (the client
        // reconnects elsewhere), then let Hummingbird close the connection, idle as it sees it.
        if event is ChannelShouldQuiesceEvent { streamFinish() }
        context.fireUserInboundEventTriggered(event)
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        if stream != nil {
            if case .head = part { stream?.requestBehind = true }
            return
        }
        switch part {
        case .head(let head):
            let started = DispatchTime.now().uptimeNanoseconds, clock = ContinuousClock.now
            if passedOnInFlight == 0, let route = route(for: head),
                let answer = route.answer(FastPathRequest(head: head, peer: peerAddress(context)))
            {
                current = .answered(answer, method: head.method, route: route.path, started: started, clock: clock)
                return
            }
            current = .passedOn
            passedOnInFlight += 1
            context.fireChannelRead(data)
        case .body:
            // A request answered here has no body (`route(for:)` makes sure): nothing to drop but noise.
            if case .passedOn = current { context.fireChannelRead(data) }
        case .end:
            guard case .answered(let answer, let method, let route, let started, let clock) = current else {
                context.fireChannelRead(data)
                return
            }
            current = .none
            write(answer, method: method, route: route, started: started, clock: clock, context: context)
        }
    }

    public func channelReadComplete(context: ChannelHandlerContext) {
        if needsFlush {
            needsFlush = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { passedOnInFlight = max(0, passedOnInFlight - 1) }
        context.write(data, promise: promise)
    }

    private func peerAddress(_ context: ChannelHandlerContext) -> String? {
        if let peer { return peer }
        let address = context.channel.remoteAddress?.ipAddress
        peer = .some(address)
        return address
    }

    /// The route for a plain `GET` of its exact path: no body, no NUL in the URL, and a connection
    /// that stays open (closing is the router's business).
    private func route(for head: HTTPRequest) -> (any FastPathRoute)? {
        // A NUL in the URL is the router's to refuse (`NulCharacterMiddleware`).
        guard head.method == .get, let target = head.path, !routes.isEmpty, !NulCharacterGuard.uriHasNul(target) else { return nil }
        let path = target.utf8.firstIndex(of: UInt8(ascii: "?")).map { target[..<$0] } ?? target[...]
        guard let route = routes[String(path)] else { return nil }
        let fields = head.headerFields
        if fields.value(of: .transferEncoding) != nil { return nil }
        if let length = fields.value(of: .contentLength), length != "0" { return nil }
        if let connection = fields.value(of: .connection), connection.lowercased() != "keep-alive" { return nil }
        return route
    }

    private func write(
        _ answer: FastPathAnswer, method: HTTPRequest.Method, route: String, started: UInt64, clock: ContinuousClock.Instant,
        context: ChannelHandlerContext
    ) {
        var (status, headers, body): (HTTPResponse.Status, HTTPFields, ByteBuffer)
        var openStream: (@Sendable (FastPathStreamWriter) -> Void)?
        switch answer {
        case .response(let answerStatus, let answerHeaders, let answerBody): (status, headers, body) = (answerStatus, answerHeaders, answerBody)
        case .stream(let streamHeaders, let open): (status, headers, body, openStream) = (.ok, streamHeaders, ByteBuffer(), open)
        case .refusal(let error):
            status = error.status
            do { (headers, body) = try error.rendered() } catch {
                (headers, body) = ((try? APIError.internalError.rendered()) ?? ([:], ByteBuffer()))
                status = .internalServerError
            }
        }
        let requestID = RequestID().description
        // A stream's length is unknown: no Content-Length makes the encoder chunk it.
        if openStream == nil { headers[.contentLength] = String(body.readableBytes) }
        headers[SesameHeaders.requestID] = requestID
        headers[.date] = HTTPDate.now
        if let serverName { headers[.server] = serverName }
        context.write(wrapOutboundOut(.head(HTTPResponse(status: status, headerFields: headers))), promise: nil)
        needsFlush = true
        if let openStream {
            stream = OpenStream()
            openStream(FastPathStreamWriter(handler: NIOLoopBound(self, eventLoop: context.eventLoop)))
        } else {
            if body.readableBytes > 0 { context.write(wrapOutboundOut(.body(body)), promise: nil) }
            context.write(wrapOutboundOut(.end(nil)), promise: nil)
        }

        let series = RequestMetrics.Route(path: route, method: method, status: status)
        // As the middleware counts a rendered refusal: a response, not an error series.
        metrics.record(series, since: started)
        answered[route]?.increment()
        if logger.logLevel <= .info {
            var logger = logger
            logger[metadataKey: "hb.request.id"] = .string(requestID)
            AccessLog.record(logger, method: method, route: route, status: status, elapsed: ContinuousClock.now - clock)
        }
    }
}

// MARK: - Streams

extension FastPathHandler {
    /// Writes part of the open stream's body now.
    fileprivate func streamWrite(_ bytes: ByteBuffer) {
        guard stream != nil, let context else { return }
        context.writeAndFlush(wrapOutboundOut(.body(bytes)), promise: nil)
    }

    /// Ends the open stream's body; the connection then serves requests again (or closes, if one
    /// arrived behind the stream).
    fileprivate func streamFinish() {
        guard let open = stream, let context else { return }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        streamClosed()
        if open.requestBehind { context.close(promise: nil) }
    }

    fileprivate func streamOnClose(_ callback: @escaping @Sendable () -> Void) {
        if stream == nil { return callback() }
        stream?.onClose.append(callback)
    }

    /// The stream ended (finished, or the connection went): tell whoever opened it, once.
    private func streamClosed() {
        guard let open = stream else { return }
        stream = nil
        for callback in open.onClose { callback() }
    }
}

/// The body of a `.stream` answer, usable from any thread: every call hops to the connection's
/// event loop (or runs at once when already on it). Writes after the stream ended are dropped.
public struct FastPathStreamWriter: Sendable {
    fileprivate let handler: NIOLoopBound<FastPathHandler>

    /// The connection's event loop.
    public var eventLoop: any EventLoop { handler.eventLoop }

    /// Writes `bytes` to the body and flushes them.
    public func write(_ bytes: ByteBuffer) { onLoop { $0.streamWrite(bytes) } }

    /// Ends the body.
    public func finish() { onLoop { $0.streamFinish() } }

    /// Calls `callback` once when the stream ends, by `finish` or by the client leaving (at once if
    /// it already has). On the event loop.
    public func onClose(_ callback: @escaping @Sendable () -> Void) { onLoop { $0.streamOnClose(callback) } }

    private func onLoop(_ body: @escaping @Sendable (FastPathHandler) -> Void) {
        if handler.eventLoop.inEventLoop {
            body(handler.value)
        } else {
            handler.eventLoop.execute { [handler] in body(handler.value) }
        }
    }
}

/// The `Date` header the application puts on every response (RFC 9110's IMF-fixdate), formatted
/// once a second, as Hummingbird's own cache does.
enum HTTPDate {
    private static let cached = Mutex<(second: Int, text: String)>((-1, ""))
    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// Now, e.g. `Mon, 23 Nov 2026 23:20:31 GMT`.
    static var now: String {
        let second = Int(Date().timeIntervalSince1970)
        return cached.withLock { cached in
            if cached.second != second { cached = (second, format(second)) }
            return cached.text
        }
    }

    static func format(_ secondsSince1970: Int) -> String {
        var time = time_t(secondsSince1970)
        var parts = tm()
        gmtime_r(&time, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}

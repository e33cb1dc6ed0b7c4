import NIOCore
import NIOHTTPTypes

/// Closes a connection whose client makes no progress, so one client cannot hold a service's
/// sockets (and a relay's call slots) by sending slowly. Checked once per `idleTimeout`; closed at a
/// check when, over the window since the last one:
///
/// - no request was open and nothing was read: an idle keep-alive, or a head that never ends (a
///   head's bytes are not a request part until it is complete, so dripping one byte at a time does
///   not count);
/// - a request's body was being read for the whole window and fewer than `minimumBodyBytes` of it
///   arrived (a body sent a byte a minute); a body that began within the window is judged at the next
///   check, over a whole window.
///
/// A response being written (its request read in full) is never cut: a stream may run for an hour.
/// So a connection is closed after one to two `idleTimeout`s without progress.
///
/// Why not Hummingbird's `idleTimeout`: its `HTTPConnectionStateHandler` sits behind the additional
/// channel handlers, so it never sees the requests `FastPathHandler` answers (it would close a busy
/// keep-alive connection, even mid-answer), and it counts any body part as progress. This handler
/// sits in front of the fast path and sees every request part and every answer.
public final class IdleConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    public typealias InboundIn = HTTPRequestPart
    public typealias InboundOut = HTTPRequestPart
    public typealias OutboundIn = HTTPResponsePart
    public typealias OutboundOut = HTTPResponsePart

    /// The least of a body that must arrive in each `idleTimeout` while it is read: 64 KiB (about
    /// 1 KiB/s at the default 60 s, well under a phone's slowest network).
    public static let defaultMinimumBodyBytes = 64 * 1024

    private let idleTimeout: TimeAmount
    private let minimumBodyBytes: Int
    private var check: RepeatedTask?
    /// Requests whose head was read and whose answer has not ended.
    private var requestsOpen = 0
    private var readingBody = false
    /// Whether the body being read began in this window (it is judged over whole windows only).
    private var bodyBeganInWindow = false
    private var readInWindow = false
    private var bodyBytesInWindow = 0

    public init(idleTimeout: TimeAmount, minimumBodyBytes: Int = IdleConnectionHandler.defaultMinimumBodyBytes) {
        self.idleTimeout = idleTimeout
        self.minimumBodyBytes = minimumBodyBytes
    }

    public func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { startChecking(context) }
    }

    public func channelActive(context: ChannelHandlerContext) {
        startChecking(context)
        context.fireChannelActive()
    }

    public func channelInactive(context: ChannelHandlerContext) {
        stopChecking()
        context.fireChannelInactive()
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        stopChecking()
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        readInWindow = true
        switch unwrapInboundIn(data) {
        case .head:
            requestsOpen += 1
            readingBody = true
            bodyBeganInWindow = true
        case .body(let bytes):
            bodyBytesInWindow += bytes.readableBytes
        case .end:
            readingBody = false
        }
        context.fireChannelRead(data)
    }

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) {
            requestsOpen = max(0, requestsOpen - 1)
            // An answer written counts as activity: the next window starts now, in effect.
            readInWindow = true
        }
        context.write(data, promise: promise)
    }

    /// Whether the window just ended shows no progress.
    private var stalled: Bool {
        if readingBody { return !bodyBeganInWindow && bodyBytesInWindow < minimumBodyBytes }
        return requestsOpen == 0 && !readInWindow
    }

    private func startChecking(_ context: ChannelHandlerContext) {
        guard check == nil else { return }
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        check = context.eventLoop.scheduleRepeatedTask(initialDelay: idleTimeout, delay: idleTimeout) { _ in
            let handler = handler.value
            if handler.stalled {
                handler.stopChecking()
                loopBound.value.close(promise: nil)
                return
            }
            handler.readInWindow = false
            handler.bodyBytesInWindow = 0
            handler.bodyBeganInWindow = false
        }
    }

    private func stopChecking() {
        check?.cancel()
        check = nil
    }
}

import Foundation
import HTTPTypes
import JWTKit
import Logging
import NIOCore
import SesameHTTP
import SesameTokens

/// `GET /v1/config/updates` opened on the event loop (`FastPathRoute`) for a caller whose token
/// this replica has verified before — an app opens its stream right after fetching its config —
/// and then held there, parked on its connection, with no task of its own.
///
/// Why: a stream written from the router's task keeps that task, and the high-water mark of the
/// stack it grew while routing, for as long as the stream lives: about 19 KiB per stream, half of
/// what 10,000 open streams cost a replica (`./sesame-dev bench streams`). A parked stream is its
/// state (a few hundred bytes) and its connection. The events are `UpdateStream`'s, as on the
/// router's path, which answers the streams this one leaves (a token not verified here yet).
struct ConfigUpdateFastPath: FastPathRoute {
    let routes: ConfigRoutes
    let notices: AppChangeNotices
    let logger: Logger
    private let queries = QueryCache()

    init(routes: ConfigRoutes, notices: AppChangeNotices, logger: Logger) {
        self.routes = routes
        self.notices = notices
        self.logger = logger
    }

    var path: String { "/v1/config/updates" }

    func answer(_ request: FastPathRequest) -> FastPathAnswer? {
        let headers = request.head.headerFields
        guard let token = headers.bearerCredential, let claims = routes.gate.tokens.remembered(token) else { return nil }
        do {
            let query = try queries.query(of: request.head.path ?? "")
            let address = routes.gate.clients.limitKey(peer: request.peer, headers: headers)
            try routes.gate.perClient.enforce(address)
            let caller = try routes.gate.authenticated(claims)
            var stream = UpdateStream(
                routes: routes, query: query, token: token, firstClaims: claims, announced: headers[ConfigUpdateRoutes.lastEventID])
            // Never a parse on the event loop: a scope not cut yet goes to the router, which cuts it.
            stream.mayParse = false
            do { try stream.refuseUnlessServed(caller) } catch is ConfigRoutes.NotOnEventLoop { return nil }
            // Counted now, with the limits checked in the same step; the stream opens right after
            // this answer is written, on this event loop, and hears the notices from then.
            let relay = AppChangeNotices.Relay()
            let subscription = try notices.subscribe(AppChangeNotices.Opener(claims: claims, address: address), listener: relay.hear)
            return .stream(headers: ConfigUpdateRoutes.headers) { [notices, stream] writer in
                ParkedUpdateStream.open(stream, subscription: subscription, relay: relay, notices: notices, writer: writer)
            }
        } catch let refusal as APIError {
            return .refusal(refusal)
        } catch {
            logger.error("unhandled error", metadata: ["error.type": "\(type(of: error))", "error": "\(String(describing: error))"])
            return .refusal(.internalError)
        }
    }
}

/// A live-config stream held on its connection's event loop: every notice hops there, is answered
/// from memory and written; a token that must be verified again, or a scope to cut for a new
/// revision, is done in a short task, never on the event loop.
private final class ParkedUpdateStream: Sendable {
    private struct State {
        var stream: UpdateStream
        /// A verification is under way: notices meanwhile are answered by its result.
        var verifying = false
        var ended = false
    }

    private let state: NIOLoopBoundBox<State>
    private let writer: FastPathStreamWriter

    private init(_ stream: UpdateStream, writer: FastPathStreamWriter) {
        state = NIOLoopBoundBox(State(stream: stream), eventLoop: writer.eventLoop)
        self.writer = writer
    }

    /// Connects the stream to its subscription, writes the first events and parks the stream
    /// until it ends. On the event loop.
    static func open(
        _ stream: UpdateStream, subscription: AppChangeNotices.Subscription, relay: AppChangeNotices.Relay, notices: AppChangeNotices,
        writer: FastPathStreamWriter
    ) {
        let parked = ParkedUpdateStream(stream, writer: writer)
        // Connected before the first events are read, so no change falls between them.
        relay.connect { notice in writer.eventLoop.execute { parked.hear(notice) } }
        writer.onClose {
            parked.state.value.ended = true
            notices.cancel(subscription)
        }
        parked.write(parked.state.value.stream.opening())
    }

    /// Answers `notice` from memory; when the token must be verified again, or the scope's cut for
    /// a new revision is not made yet, does that in a short task and answers on its return.
    private func hear(_ notice: AppChangeNotices.Notice) {
        guard !state.value.ended, !state.value.verifying else { return }
        if let answer = state.value.stream.events(on: notice), !state.value.stream.cutPending { return write(answer) }
        state.value.verifying = true
        let stream = state.value.stream
        Task { [self] in
            let verification = await stream.verifyAgain()
            stream.makeCut(for: verification)
            writer.eventLoop.execute { [self] in
                state.value.verifying = false
                guard !state.value.ended else { return }
                write(state.value.stream.events(after: verification, on: notice))
            }
        }
    }

    private func write(_ answer: (ByteBuffer, ends: Bool)) {
        let (events, ends) = answer
        if events.readableBytes > 0 { writer.write(events) }
        if ends {
            state.value.ended = true
            writer.finish()
        }
    }
}

import Foundation
import HTTPTypes
import JWTKit
import Hummingbird
import NIOCore
import SesameHTTP
import SesameTokens
import ServiceLifecycle

/// `GET /v1/config/updates?version=2.1.3[&scope=…]`: server-sent events telling a running app that
/// what `GET /v1/config` would answer it has changed, so it refetches within a second instead of at
/// its next launch.
///
/// Server-sent events rather than long polling: one request per app for as long as its token
/// lives, no request per change, and `Last-Event-ID` (the ETag last announced) for free on
/// reconnects. Events:
///
/// - `config` (`id:` the ETag, `data: {"etag":…}`): sent on connect and whenever the
///   ETag changes; the app refetches with `If-None-Match` when it differs from what it holds.
/// - `no_config`: nothing is published for the version (sent once per change into that state).
/// - `version_disabled` (`data: {"reason":…}`), then the stream ends: a kill switch, pushed.
/// - `refused` (`data: {"status":…,"code":…,"message":…}`), then the stream ends: every gate of
///   `GET /v1/config` is checked again at every notice (a revoked install or debug token, a tier
///   the policy closed, a signing key revoked); the app refetches and meets the same refusal.
/// - `token_expired`, then the stream ends, at the access token's expiry (within one tick): the
///   app reconnects with a new token.
/// - a `: heartbeat` comment every tick, so proxies and the app see a live connection.
struct ConfigUpdateRoutes: Sendable {
    let routes: ConfigRoutes
    let notices: AppChangeNotices

    /// Adds `GET updates` to the `v1/config` group.
    func addRoutes(to group: RouterGroup<SesameRequestContext>) {
        group.get("updates") { request, context in try await respond(to: request, context: context) }
    }

    /// The response headers of a stream.
    static let headers: HTTPFields = [
        .contentType: "text/event-stream", .cacheControl: "no-store",
        // nginx: pass each event on as it is written.
        HTTPField.Name("X-Accel-Buffering")!: "no",
    ]

    static let lastEventID = HTTPField.Name("Last-Event-ID")!

    /// A stream for a caller whose token this replica has not verified yet, or any the fast path
    /// (`ConfigUpdateFastPath`) leaves: the same events, written from the connection's task.
    func respond(to request: Request, context: SesameRequestContext) async throws -> Response {
        let query = try ConfigRoutes.Query(request.uri)
        let caller = try await routes.gate.authenticate(request, context: context)
        let stream = UpdateStream(
            routes: routes, query: query, token: request.bearerCredential ?? "", firstClaims: caller.claims,
            announced: request.headers[Self.lastEventID])
        try stream.refuseUnlessServed(caller)
        let opener = AppChangeNotices.Opener(claims: caller.claims, address: routes.gate.clients.limitKey(of: request, context: context))
        // Subscribed (and counted) now, before the answer: the notices wait in the stream until
        // its body is written; a body never written releases them, and its place, with it.
        let (subscription, noticeStream) = try notices.notices(for: opener)
        let body = ResponseBody { [notices] writer in
            var stream = stream
            try await stream.run(writing: &writer, notices: notices, subscription: subscription, noticeStream: noticeStream)
        }
        return Response(status: .ok, headers: Self.headers, body: body)
    }
}

/// One open stream: what it last announced, and what to say next.
///
/// A notice is answered synchronously from delivery's memory (the remembered token, the app's
/// state, the ETag) unless the token must be verified again, so 10,000 streams woken by one
/// change cost no suspension each.
struct UpdateStream: Sendable {
    let routes: ConfigRoutes
    let query: ConfigRoutes.Query
    let token: String
    /// The claims the request was admitted with, for the first events.
    let firstClaims: AccessTokenClaims
    /// The ETag last announced (or `Last-Event-ID`), `none` after `no_config`.
    var announced: String?
    /// Whether a scope may be cut here (not on an event loop: a parked stream's events are read
    /// there). When it may not and the scope's cut is not made yet, `cutPending` says so and the
    /// events wait for `makeCut` off the event loop.
    var mayParse = true
    /// The last events could not be read: the scope's cut is not made yet (`makeCut`).
    private(set) var cutPending = false

    /// The token checked again, once it is no longer remembered.
    enum Verification: Sendable {
        case valid(AccessTokenClaims)
        /// Expired, or signed by a key that left the set.
        case invalid
        /// The signing keys could not be loaded (PostgreSQL away).
        case unknown
    }

    /// Writes the stream's events until it ends (a kill switch, a refusal, the token's expiry, the
    /// client gone, or the server shutting down).
    mutating func run(
        writing writer: inout any ResponseBodyWriter, notices: AppChangeNotices, subscription: AppChangeNotices.Subscription,
        noticeStream: AsyncStream<AppChangeNotices.Notice>
    ) async throws {
        // The first events are read after the subscription was made, so no change falls between.
        defer { notices.cancel(subscription) }
        var (bytes, ends) = opening()
        try await writer.write(bytes)
        if ends { return try await writer.finish(nil) }
        // The server waits for this response before it stops: end the stream when it begins to,
        // and the client reconnects elsewhere.
        try await withGracefulShutdownHandler {
            for await notice in noticeStream {
                if let answer = events(on: notice) {
                    (bytes, ends) = answer
                } else {
                    (bytes, ends) = events(after: await verifyAgain(), on: notice)
                }
                try await writer.write(bytes)
                if ends { break }
            }
        } onGracefulShutdown: {
            notices.end(subscription)
        }
        try await writer.finish(nil)
    }

    /// Refuses the stream before it is answered as `GET /v1/config` would refuse the caller now:
    /// a kill switch, an emergency revocation, a revoked install or a closed tier are an HTTP
    /// refusal, not a `200` that ends at once (EventSource clients would reconnect every 3 s for
    /// ever). Nothing published yet is no refusal: the stream says `no_config` and waits.
    /// - Throws: `ConfigRoutes.NotOnEventLoop` when the scope is not cut yet and `mayParse` is false.
    func refuseUnlessServed(_ caller: AccessGate.Authenticated) throws {
        do {
            _ = try routes.answer(query, caller: caller, ifNoneMatch: "*", now: Date(), mayParse: mayParse)
        } catch let error as APIError where error.code == "no_config" {
            return
        }
    }

    /// What a stream says first: the reconnect delay, then the state now.
    mutating func opening() -> (ByteBuffer, ends: Bool) {
        var (events, ends) = events(claims: firstClaims)
        events.prependRetry()
        return (events, ends)
    }

    /// What a notice calls for, answered from memory; nil when the token is no longer remembered
    /// (expired, or the key set changed): `verifyAgain()`, then `events(after:on:)`.
    mutating func events(on notice: AppChangeNotices.Notice) -> (ByteBuffer, ends: Bool)? {
        if notice == .shutdown { return (ByteBuffer(), true) }
        guard let claims = routes.gate.tokens.remembered(token) else { return nil }
        return Self.heartbeat(events(claims: claims), on: notice)
    }

    /// Makes the scope's cut for the config `claims` get now, so that the next events read it from
    /// memory; off the event loop (it parses the config once per revision and scope).
    func makeCut(for verification: Verification) {
        guard case .valid(let claims) = verification, let caller = try? routes.gate.standing(of: claims) else { return }
        _ = try? routes.answer(query, caller: caller, ifNoneMatch: "*", now: Date(), mayParse: true)
    }

    /// Verifies the token again (it may wait for the signing keys).
    func verifyAgain() async -> Verification {
        do {
            return .valid(try await routes.gate.tokens.verify(token))
        } catch is TokenError {
            return .invalid
        } catch {
            return .unknown
        }
    }

    /// What a notice calls for once the token was verified again.
    mutating func events(after verification: Verification, on notice: AppChangeNotices.Notice) -> (ByteBuffer, ends: Bool) {
        var events = ByteBuffer()
        switch verification {
        case .valid(let claims):
            return Self.heartbeat(self.events(claims: claims), on: notice)
        case .invalid where firstClaims.expiration.value <= Date():
            events.writeString("event: token_expired\ndata: {}\n\n")
            return (events, true)
        case .invalid:
            events.writeString("event: refused\ndata: {\"status\":401,\"code\":\"invalid_token\",\"message\":\"The access token is no longer valid.\"}\n\n")
            return (events, true)
        case .unknown:
            // Say nothing (but the heartbeat), look again at the next notice.
            return Self.heartbeat((events, false), on: notice)
        }
    }

    /// A tick with nothing to say says it is alive.
    private static func heartbeat(_ answer: (ByteBuffer, ends: Bool), on notice: AppChangeNotices.Notice) -> (ByteBuffer, ends: Bool) {
        var (events, ends) = answer
        if notice == .tick && events.readableBytes == 0 && !ends { events.writeString(": heartbeat\n\n") }
        return (events, ends)
    }

    /// The events to send now for a caller with `claims`, and whether the stream ends after them.
    private mutating func events(claims: AccessTokenClaims) -> (ByteBuffer, ends: Bool) {
        var events = ByteBuffer()
        guard claims.expiration.value > Date() else {
            events.writeString("event: token_expired\ndata: {}\n\n")
            return (events, true)
        }
        do {
            let caller = try routes.gate.standing(of: claims)
            // Only the ETag is wanted: `*` makes the answer a 304, which carries it without the body
            // being built (10,000 streams woken by one change would each build one).
            let answer = try routes.answer(query, caller: caller, ifNoneMatch: "*", now: Date(), mayParse: mayParse)
            cutPending = false
            let etag = answer.headers[.eTag] ?? ""
            if etag != announced {
                announced = etag
                events.writeString("id: \(etag)\nevent: config\ndata: {\"etag\":\(Self.json(etag))}\n\n")
            }
            return (events, false)
        } catch let error as APIError {
            return refused(error)
        } catch is ConfigRoutes.NotOnEventLoop {
            cutPending = true
            return (events, false)
        } catch {
            events.writeString("event: refused\ndata: {\"status\":500,\"code\":\"internal\",\"message\":\"The config could not be read.\"}\n\n")
            return (events, true)
        }
    }

    /// What a refusal of the config route says on the stream.
    private mutating func refused(_ error: APIError) -> (ByteBuffer, ends: Bool) {
        var events = ByteBuffer()
        switch error.code {
        case "no_config":
            if announced != "none" {
                announced = "none"
                events.writeString("id: none\nevent: no_config\ndata: {}\n\n")
            }
            return (events, false)
        case "app_unavailable", "service_unavailable":
            // Delivery cannot read the app or the keys right now: say nothing, look again at the next notice.
            return (events, false)
        case "version_disabled":
            events.writeString("event: version_disabled\ndata: {\"reason\":\(Self.json(error.message))}\n\n")
            return (events, true)
        default:
            events.writeString(
                "event: refused\ndata: {\"status\":\(error.status.code),\"code\":\(Self.json(error.code)),\"message\":\(Self.json(error.message))}\n\n")
            return (events, true)
        }
    }

    /// `text` as a JSON string (SSE data is one line: JSON escapes newlines).
    static func json(_ text: String) -> String {
        String(decoding: (try? JSONEncoder().encode(text)) ?? Data("\"\"".utf8), as: UTF8.self)
    }
}

extension ByteBuffer {
    /// Puts the stream's reconnect delay before its first events.
    fileprivate mutating func prependRetry() {
        var withRetry = ByteBuffer(string: "retry: 3000\n\n")
        withRetry.writeBuffer(&self)
        self = withRetry
    }
}

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

    func respond(to request: Request, context: SesameRequestContext) async throws -> Response {
        let query = try ConfigRoutes.Query(request.uri)
        let caller = try await routes.gate.authenticate(request, context: context)
        let (token, claims) = (request.bearerCredential ?? "", caller.claims)
        let lastEventID = request.headers[HTTPField.Name("Last-Event-ID")!]
        let headers: HTTPFields = [
            .contentType: "text/event-stream", .cacheControl: "no-store",
            // nginx: pass each event on as it is written.
            HTTPField.Name("X-Accel-Buffering")!: "no",
        ]
        let body = ResponseBody { [routes, notices] writer in
            var stream = UpdateStream(routes: routes, query: query, token: token, firstClaims: claims, announced: lastEventID)
            try await stream.run(writing: &writer, notices: notices)
        }
        return Response(status: .ok, headers: headers, body: body)
    }
}

/// One open stream: what it last announced, and what to say next.
///
/// A notice is answered synchronously from delivery's memory (the remembered token, the app's
/// state, the ETag) unless the token must be verified again, so 10,000 streams woken by one
/// change cost no suspension each.
private struct UpdateStream {
    let routes: ConfigRoutes
    let query: ConfigRoutes.Query
    let token: String
    /// The claims the request was admitted with, for the first events.
    let firstClaims: AccessTokenClaims
    /// The ETag last announced (or `Last-Event-ID`), `none` after `no_config`.
    var announced: String?

    /// Writes the stream's events until it ends (a kill switch, a refusal, the token's expiry, the
    /// client gone, or the service shutting down: `AppChangeNotices` then finishes every subscription).
    mutating func run(writing writer: inout any ResponseBodyWriter, notices: AppChangeNotices) async throws {
        // Subscribed only once the body is being written, so a response never written (the
        // client gone first) leaves no subscription behind; the first events are read after it.
        let subscription = notices.subscribe(firstClaims.appID)
        defer { notices.cancel(subscription) }
        try await writer.write(ByteBuffer(string: "retry: 3000\n\n"))
        var (events, ends) = events(claims: firstClaims)
        try await writer.write(events)
        if ends { return try await writer.finish(nil) }
        for await notice in subscription.notices {
            if let claims = routes.gate.tokens.remembered(token) {
                (events, ends) = self.events(claims: claims)
            } else {
                (events, ends) = await eventsVerifyingAgain()
            }
            if notice == .tick && events.readableBytes == 0 && !ends { events.writeString(": heartbeat\n\n") }
            try await writer.write(events)
            if ends { break }
        }
        try await writer.finish(nil)
    }

    /// The token is no longer remembered (expired, or the key set changed): verify it again.
    private mutating func eventsVerifyingAgain() async -> (ByteBuffer, ends: Bool) {
        do {
            return events(claims: try await routes.gate.tokens.verify(token))
        } catch is TokenError {
            // Expired, or signed by a key that left the set.
            var events = ByteBuffer()
            if firstClaims.expiration.value <= Date() {
                events.writeString("event: token_expired\ndata: {}\n\n")
            } else {
                events.writeString("event: refused\ndata: {\"status\":401,\"code\":\"invalid_token\",\"message\":\"The access token is no longer valid.\"}\n\n")
            }
            return (events, true)
        } catch {
            // The signing keys could not be loaded (PostgreSQL away): say nothing, look again at the next notice.
            return (ByteBuffer(), false)
        }
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
            let answer = try routes.answer(query, caller: caller, ifNoneMatch: "*", now: Date())
            let etag = answer.headers[.eTag] ?? ""
            if etag != announced {
                announced = etag
                events.writeString("id: \(etag)\nevent: config\ndata: {\"etag\":\(Self.json(etag))}\n\n")
            }
            return (events, false)
        } catch let error as APIError {
            return refused(error)
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

import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import Synchronization
import Testing

@testable import SesameHTTP

/// A fast path whose answers the test decides, recording what it was asked.
final class ScriptedFastPath: FastPathRoute {
    let path = "/fast"
    let asked = Mutex<[FastPathRequest]>([])
    let reply: @Sendable (FastPathRequest) -> FastPathAnswer?

    init(reply: @escaping @Sendable (FastPathRequest) -> FastPathAnswer?) { self.reply = reply }

    func answer(_ request: FastPathRequest) -> FastPathAnswer? {
        asked.withLock { $0.append(request) }
        return reply(request)
    }

    var askedCount: Int { asked.withLock(\.count) }
}

@Suite("Fast path: routes answered on the event loop")
struct FastPathHandlerTests {
    static let ok = FastPathAnswer.response(
        status: .ok, headers: [.contentType: "application/json", .eTag: "\"1-abc\""], body: ByteBuffer(string: #"{"ok":true}"#))

    func channel(_ route: ScriptedFastPath) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(
            FastPathHandler(routes: [route], serverName: "sesame-test", logger: Logger(label: "fast-path-test"), metrics: RequestMetrics()))
        // Active, as a client's connection is (a stream's end may close it).
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 40_000)).wait()
        return channel
    }

    func request(_ path: String, method: HTTPRequest.Method = .get, headers: HTTPFields = [:]) -> HTTPRequest {
        HTTPRequest(method: method, scheme: nil, authority: "sesame.test", path: path, headerFields: headers)
    }

    func send(_ request: HTTPRequest, body: String? = nil, to channel: EmbeddedChannel) throws {
        try channel.writeInbound(HTTPRequestPart.head(request))
        if let body { try channel.writeInbound(HTTPRequestPart.body(ByteBuffer(string: body))) }
        try channel.writeInbound(HTTPRequestPart.end(nil))
    }

    /// The parts the handler wrote, as one response.
    func response(from channel: EmbeddedChannel) throws -> (head: HTTPResponse, body: String)? {
        guard case .head(let head)? = try channel.readOutbound(as: HTTPResponsePart.self) else { return nil }
        var body = ""
        while let part = try channel.readOutbound(as: HTTPResponsePart.self) {
            switch part {
            case .body(let buffer): body += String(buffer: buffer)
            case .end: return (head, body)
            case .head: Issue.record("a second head before the end")
            }
        }
        Issue.record("no end")
        return nil
    }

    /// The request parts passed on to the router.
    func passedOn(_ channel: EmbeddedChannel) throws -> [HTTPRequestPart] {
        var parts: [HTTPRequestPart] = []
        while let part = try channel.readInbound(as: HTTPRequestPart.self) { parts.append(part) }
        return parts
    }

    @Test("an answer is written whole with Content-Length, X-Request-Id and Server; the router never sees the request")
    func answers() throws {
        let route = ScriptedFastPath { _ in Self.ok }
        let channel = try channel(route)
        try send(request("/fast?version=2.1.3", headers: [.authorization: "Bearer t"]), to: channel)
        let (head, body) = try #require(try response(from: channel))
        #expect(head.status == .ok && body == #"{"ok":true}"#)
        #expect(head.headerFields[.contentLength] == String(body.utf8.count))
        #expect(head.headerFields[.eTag] == "\"1-abc\"" && head.headerFields[.server] == "sesame-test")
        #expect(head.headerFields[.date] == HTTPDate.now || head.headerFields[.date] == HTTPDate.format(Int(Date().timeIntervalSince1970) - 1))
        let requestID = try #require(head.headerFields[SesameHeaders.requestID])
        #expect(requestID.count >= 16)
        #expect(try passedOn(channel).isEmpty)
        #expect(route.asked.withLock { $0.first?.head.path } == "/fast?version=2.1.3")

        // Each answer has its own request id.
        try send(request("/fast"), to: channel)
        #expect(try response(from: channel)?.head.headerFields[SesameHeaders.requestID] != requestID)
    }

    @Test("the Date header is RFC 9110's IMF-fixdate")
    func dateHeader() {
        #expect(HTTPDate.format(0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.format(1_795_476_031) == "Mon, 23 Nov 2026 23:20:31 GMT")
    }

    @Test("a refusal renders as the router's error middleware renders it")
    func refusal() throws {
        let refusal = APIError(.forbidden, code: AccessTokenErrorCode.versionDisabled, message: "Update, please.")
        let channel = try channel(ScriptedFastPath { _ in .refusal(refusal) })
        try send(request("/fast"), to: channel)
        let (head, body) = try #require(try response(from: channel))
        let (expectedHeaders, expectedBody) = try refusal.rendered()
        #expect(head.status == .forbidden && body == String(buffer: expectedBody))
        #expect(head.headerFields[.contentType] == expectedHeaders[.contentType])
        #expect(body.contains(#""code":"version_disabled""#))
    }

    @Test("what the fast path declines, and every other request, reaches the router untouched")
    func passesOn() throws {
        let route = ScriptedFastPath { $0.head.headerFields[.authorization] == nil ? nil : Self.ok }
        let channel = try channel(route)
        for (sent, body) in [
            (request("/fast"), nil),  // declined: no token
            (request("/other"), nil),
            (request("/fast/more", headers: [.authorization: "Bearer t"]), nil),
            (request("/fast", method: .post, headers: [.authorization: "Bearer t", .contentLength: "2"]), "{}"),
            (request("/fast", method: .head, headers: [.authorization: "Bearer t"]), nil),
            (request("/fast", headers: [.authorization: "Bearer t", .contentLength: "2"]), "{}"),
            (request("/fast", headers: [.authorization: "Bearer t", .transferEncoding: "chunked"]), nil),
            (request("/fast", headers: [.authorization: "Bearer t", .connection: "close"]), nil),
            (request("/fast?scope=a%00", headers: [.authorization: "Bearer t"]), nil),  // a NUL: the router refuses it
        ] as [(HTTPRequest, String?)] {
            try send(sent, body: body, to: channel)
            let parts = try passedOn(channel)
            #expect(parts.first == .head(sent), "\(sent)")
            #expect(parts.last == .end(nil) && parts.count == (body == nil ? 2 : 3), "\(sent)")
            #expect(try channel.readOutbound(as: HTTPResponsePart.self) == nil, "answered \(sent)")
            // The router's answer goes out through the handler untouched.
            try channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .noContent)))
            try channel.writeOutbound(HTTPResponsePart.end(nil))
            #expect(try channel.readOutbound(as: HTTPResponsePart.self) == .head(HTTPResponse(status: .noContent)))
            #expect(try channel.readOutbound(as: HTTPResponsePart.self) == .end(nil))
        }
        // Only the first was the fast path's to decline; the others never reached it.
        #expect(route.askedCount == 1)
    }

    @Test("answers stay in request order: behind a request the router has not answered yet, the next goes to the router too")
    func order() throws {
        let route = ScriptedFastPath { $0.head.headerFields[.authorization] == nil ? nil : Self.ok }
        let channel = try channel(route)
        try send(request("/fast"), to: channel)  // declined: the router has it
        try send(request("/fast", headers: [.authorization: "Bearer t"]), to: channel)  // pipelined behind it
        #expect(try passedOn(channel).count == 4)
        #expect(try channel.readOutbound(as: HTTPResponsePart.self) == nil)
        #expect(route.askedCount == 1)
        // The router answers both; then the fast path answers again.
        for _ in 0..<2 {
            try channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .ok)))
            try channel.writeOutbound(HTTPResponsePart.end(nil))
        }
        while try channel.readOutbound(as: HTTPResponsePart.self) != nil {}
        try send(request("/fast", headers: [.authorization: "Bearer t"]), to: channel)
        #expect(try response(from: channel)?.body == #"{"ok":true}"#)
        #expect(try passedOn(channel).isEmpty)
    }

    /// A stream answer whose writer the test holds, counting its closes.
    final class StreamScript: Sendable {
        let writer = Mutex<FastPathStreamWriter?>(nil)
        let closes = Atomic<Int>(0)

        var answer: FastPathAnswer {
            .stream(headers: [.contentType: "text/event-stream"]) { writer in
                self.writer.withLock { $0 = writer }
                writer.write(ByteBuffer(string: "event: hello\n\n"))
                writer.onClose { self.closes.add(1, ordering: .relaxed) }
            }
        }
    }

    /// The parts written so far.
    func written(_ channel: EmbeddedChannel) throws -> [HTTPResponsePart] {
        var parts: [HTTPResponsePart] = []
        while let part = try channel.readOutbound(as: HTTPResponsePart.self) { parts.append(part) }
        return parts
    }

    @Test("a stream's head goes out without Content-Length (chunked), its body as the route writes it, its end when the route finishes; then the connection serves again")
    func stream() throws {
        let script = StreamScript()
        let channel = try channel(ScriptedFastPath { _ in script.answer })
        try send(request("/fast"), to: channel)
        let opened = try written(channel)
        guard case .head(let head) = opened.first else {
            Issue.record("no head: \(opened)")
            return
        }
        #expect(head.status == .ok && head.headerFields[.contentType] == "text/event-stream")
        #expect(head.headerFields[.contentLength] == nil && head.headerFields[SesameHeaders.requestID] != nil)
        #expect(Array(opened.dropFirst()) == [.body(ByteBuffer(string: "event: hello\n\n"))])

        let writer = try #require(script.writer.withLock { $0 })
        writer.write(ByteBuffer(string: ": heartbeat\n\n"))
        #expect(try written(channel) == [.body(ByteBuffer(string: ": heartbeat\n\n"))])
        writer.finish()
        #expect(try written(channel) == [.end(nil)])
        #expect(script.closes.load(ordering: .relaxed) == 1)
        writer.write(ByteBuffer(string: "late"))
        writer.finish()
        #expect(try written(channel).isEmpty, "nothing after the end")
        #expect(channel.isActive && script.closes.load(ordering: .relaxed) == 1)

        // The connection answers again after the stream.
        try send(request("/fast"), to: channel)
        #expect(try written(channel).count == 2)
    }

    @Test("a client leaving ends the stream: the route hears it once, and later writes go nowhere")
    func streamClientLeaves() throws {
        let script = StreamScript()
        let channel = try channel(ScriptedFastPath { _ in script.answer })
        try send(request("/fast"), to: channel)
        _ = try written(channel)
        let writer = try #require(script.writer.withLock { $0 })
        channel.pipeline.fireChannelInactive()
        #expect(script.closes.load(ordering: .relaxed) == 1)
        writer.write(ByteBuffer(string: "late"))
        writer.finish()
        #expect(try written(channel).isEmpty)
        // A close callback added after the end runs at once.
        writer.onClose { script.closes.add(1, ordering: .relaxed) }
        #expect(script.closes.load(ordering: .relaxed) == 2)
    }

    @Test("a request sent behind an open stream is neither answered nor passed on; the connection closes when the stream ends")
    func requestBehindStream() throws {
        let script = StreamScript()
        let route = ScriptedFastPath { _ in script.answer }
        let channel = try channel(route)
        try send(request("/fast"), to: channel)
        _ = try written(channel)
        try send(request("/other"), to: channel)
        #expect(try passedOn(channel).isEmpty && route.askedCount == 1)
        #expect(try written(channel).isEmpty)
        try #require(script.writer.withLock { $0 }).finish()
        #expect(try written(channel) == [.end(nil)])
        #expect(!channel.isActive, "closed: the request behind the stream cannot be answered in order")
    }

    @Test("a graceful shutdown ends an open stream's body before the connection is closed")
    func streamAtShutdown() throws {
        let script = StreamScript()
        let channel = try channel(ScriptedFastPath { _ in script.answer })
        try send(request("/fast"), to: channel)
        _ = try written(channel)
        channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        #expect(try written(channel) == [.end(nil)])
        #expect(script.closes.load(ordering: .relaxed) == 1)
    }
}

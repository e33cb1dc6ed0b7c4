import HTTPTypes
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import Testing

@testable import SesameHTTP

/// A connection that makes no progress is closed after one to two idle timeouts; one whose answer is
/// being written, or whose requests keep coming, is not (issue 72, medium 2).
@Suite("Idle connections are closed, busy ones are not")
struct IdleConnectionHandlerTests {
    static let timeout = TimeAmount.seconds(60)

    func channel(minimumBodyBytes: Int = 1024) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(IdleConnectionHandler(idleTimeout: Self.timeout, minimumBodyBytes: minimumBodyBytes))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 40_000)).wait()
        return channel
    }

    static let head = HTTPRequestPart.head(HTTPRequest(method: .post, scheme: nil, authority: "sesame.test", path: "/x"))
    static let answerHead = HTTPResponsePart.head(HTTPResponse(status: .ok))

    @Test("a connection that never sends a request, or sends nothing after its answer, is closed within two timeouts")
    func idle() throws {
        let silent = try channel()
        silent.embeddedEventLoop.advanceTime(by: Self.timeout * 2)
        #expect(!silent.isActive)

        let keptAlive = try channel()
        try keptAlive.writeInbound(Self.head)
        try keptAlive.writeInbound(HTTPRequestPart.end(nil))
        try keptAlive.writeOutbound(Self.answerHead)
        try keptAlive.writeOutbound(HTTPResponsePart.end(nil))
        keptAlive.embeddedEventLoop.advanceTime(by: Self.timeout)
        #expect(keptAlive.isActive, "the window held a request")
        keptAlive.embeddedEventLoop.advanceTime(by: Self.timeout)
        #expect(!keptAlive.isActive)
    }

    @Test("a body that drips below the minimum over a whole window is cut; one above it, or one that began just before a check, is not")
    func drippingBody() throws {
        let dripping = try channel(minimumBodyBytes: 1024)
        try dripping.writeInbound(Self.head)
        for _ in 0..<6 {
            try dripping.writeInbound(HTTPRequestPart.body(ByteBuffer(repeating: 0, count: 1)))
            dripping.embeddedEventLoop.advanceTime(by: .seconds(20))
        }
        #expect(!dripping.isActive, "a byte every 20 s kept the connection")

        // An upload that starts a second before a check has sent little by then: not judged yet.
        let starting = try channel(minimumBodyBytes: 1024)
        starting.embeddedEventLoop.advanceTime(by: .seconds(59))
        try starting.writeInbound(Self.head)
        try starting.writeInbound(HTTPRequestPart.body(ByteBuffer(repeating: 0, count: 100)))
        starting.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(starting.isActive, "a body begun a second before the check was cut")
        try starting.writeInbound(HTTPRequestPart.body(ByteBuffer(repeating: 0, count: 2048)))
        starting.embeddedEventLoop.advanceTime(by: Self.timeout)
        #expect(starting.isActive)

        let flowing = try channel(minimumBodyBytes: 1024)
        try flowing.writeInbound(Self.head)
        for _ in 0..<9 {
            try flowing.writeInbound(HTTPRequestPart.body(ByteBuffer(repeating: 0, count: 512)))
            flowing.embeddedEventLoop.advanceTime(by: .seconds(20))
        }
        #expect(flowing.isActive, "1.5 KiB a minute is above the minimum")
    }

    @Test("an answer being written is never cut, however long; requests that keep coming keep the connection")
    func busy() throws {
        let streaming = try channel()
        try streaming.writeInbound(Self.head)
        try streaming.writeInbound(HTTPRequestPart.end(nil))
        try streaming.writeOutbound(Self.answerHead)
        streaming.embeddedEventLoop.advanceTime(by: .hours(1))
        #expect(streaming.isActive)
        try streaming.writeOutbound(HTTPResponsePart.end(nil))
        streaming.embeddedEventLoop.advanceTime(by: Self.timeout * 2)
        #expect(!streaming.isActive)

        let polling = try channel()
        for _ in 0..<10 {
            try polling.writeInbound(Self.head)
            try polling.writeInbound(HTTPRequestPart.end(nil))
            try polling.writeOutbound(Self.answerHead)
            try polling.writeOutbound(HTTPResponsePart.end(nil))
            polling.embeddedEventLoop.advanceTime(by: .seconds(50))
        }
        #expect(polling.isActive)
    }
}

import Foundation
import SesameKitTesting
import Testing

@testable import SesameKit

/// The scripted Sesame with a notice stream: each `GET /v1/config/updates` is answered by
/// `answer`, given how many were opened before, with a status and the events to send.
final class StreamingSesame: HTTPStreamingTransport, Sendable {
    let sesame: ScriptedSesame
    let opened = Locked(0)
    /// Streams whose connection the client closed.
    let closed = Locked(0)
    /// Whether a stream stays open after its events, as a healthy one does, until the client closes it.
    let holdOpen: Bool
    let answer: @Sendable (_ index: Int, _ sesame: ScriptedSesame) -> (status: Int, events: String)
    /// The streams held open now, for `push`.
    let open = Locked<[UUID: AsyncThrowingStream<Data, any Error>.Continuation]>([:])

    init(
        _ sesame: ScriptedSesame, holdOpen: Bool = false,
        answer: @escaping @Sendable (_ index: Int, _ sesame: ScriptedSesame) -> (status: Int, events: String)
    ) {
        self.sesame = sesame
        self.holdOpen = holdOpen
        self.answer = answer
    }

    func send(_ request: HTTPExchange.Request) async throws -> HTTPExchange.Response { try await sesame.send(request) }

    /// Sends `events` down every stream held open (a publish reaching the app).
    func push(_ events: String) {
        for stream in open.withLock({ Array($0.values) }) { stream.yield(Data(events.utf8)) }
    }

    func stream(_ request: HTTPExchange.Request) async throws -> (HTTPExchange.Response, AsyncThrowingStream<Data, any Error>) {
        let index = opened.withLock { count in
            defer { count += 1 }
            return count
        }
        let (status, events) = answer(index, sesame)
        let body = AsyncThrowingStream<Data, any Error> { continuation in
            continuation.yield(Data(events.utf8))
            if holdOpen {
                let id = UUID()
                self.open.withLock { $0[id] = continuation }
                continuation.onTermination = { _ in
                    self.open.withLock { $0[id] = nil }
                    self.closed.withLock { $0 += 1 }
                }
            } else {
                continuation.finish()
            }
        }
        return (HTTPExchange.Response(status: status, headers: ["content-type": "text/event-stream"], body: Data()), body)
    }
}

// Serialized: the lifecycle test posts app-wide notifications, which every follower hears.
@Suite("SesameKit's live updates through failures and the app's lifecycle", .serialized, .timeLimit(.minutes(1)))
struct LiveUpdateTests {
    static func client(_ transport: StreamingSesame, on device: DeviceLifecycle) -> SesameClient {
        device.client(
            configuration: SesameClient.Configuration(
                baseURL: URL(string: "https://sesame.example.com")!, teamID: "A1B2C3D4E5", bundleID: "com.example.app", appVersion: "2.1.3"),
            attestation: FakeAppAttest(), transport: transport)
    }

    /// Runs `updates()` until the device's clock passes a minute (or far too many streams were
    /// opened: the hot loop); returns how many streams were opened and what ended the sequence.
    static func aMinuteOf(_ answer: @escaping @Sendable (Int, ScriptedSesame) -> (status: Int, events: String)) async throws -> (streams: Int, ended: (any Error)?) {
        let transport = StreamingSesame(ScriptedSesame(), answer: answer)
        let device = try DeviceLifecycle()
        let start = device.now
        device.letSleepsPassTime(for: 60)
        let client = Self.client(transport, on: device)
        let updates = client.updates()
        let finished = Locked(false)
        let watcher = Task { () -> (any Error)? in
            defer { finished.withLock { $0 = true } }
            do {
                for try await _ in updates {}
                return nil
            } catch {
                return error
            }
        }
        // Real time runs only to let the loop turn; the clock's minute passes in its sleeps.
        while device.now.timeIntervalSince(start) < 60, transport.opened.withLock({ $0 }) < 200, !finished.withLock({ $0 }) {
            try await Task.sleep(for: .milliseconds(2))
        }
        watcher.cancel()
        return (transport.opened.withLock { $0 }, await watcher.value)
    }

    @Test("a server whose stream answers refused with a 500 at once: a minute costs at most 10 streams, backing off")
    func refusedServerErrorBacksOff() async throws {
        let (streams, _) = try await Self.aMinuteOf { _, _ in
            (200, "event: refused\ndata: {\"status\":500,\"code\":\"internal\",\"message\":\"The config could not be read.\"}\n\n")
        }
        #expect(streams >= 2 && streams <= 10, "\(streams) streams in a minute")
    }

    @Test("a server that closes every stream at once: a minute costs at most 10 streams")
    func closedAtOnceBacksOff() async throws {
        let (streams, _) = try await Self.aMinuteOf { _, _ in (200, "") }
        #expect(streams >= 2 && streams <= 10, "\(streams) streams in a minute")
    }

    @Test("a refusal that will repeat (a 4xx other than 401 and 429) ends the updates with its code, after one stream")
    func lastingRefusalStops() async throws {
        let (streams, ended) = try await Self.aMinuteOf { _, _ in
            (200, "event: refused\ndata: {\"status\":422,\"code\":\"scope_not_supported\",\"message\":\"A zero-knowledge config cannot be scoped.\"}\n\n")
        }
        #expect(streams == 1)
        #expect(ended as? SesameError == .server(code: "scope_not_supported", message: "A zero-knowledge config cannot be scoped."))
    }

    @Test("503 at the stream's head backs off too")
    func unavailableHeadBacksOff() async throws {
        let (streams, _) = try await Self.aMinuteOf { _, _ in (503, "") }
        #expect(streams >= 2 && streams <= 10, "\(streams) streams in a minute")
    }

    @Test("a launch with a stale saved config: the config revalidated in the background is handed over when the stream announces it")
    func revalidatedConfigIsEmitted() async throws {
        let sesame = ScriptedSesame()
        sesame.with { $0.refreshAfter = 60 }
        let device = try DeviceLifecycle()
        let transport = StreamingSesame(sesame) { _, sesame in
            let revision = sesame.with { $0.revision }
            return (200, "event: config\nid: \"\(revision)-etag\"\ndata: {}\n\n")
        }
        _ = try await Self.client(transport, on: device).fetchConfig()
        // The next launch, past the saved copy's freshness, with a new config published meanwhile.
        device.advance(61)
        sesame.with {
            $0.config = #"{"api_keys":{"stripe":"sk_live_2"}}"#
            $0.revision = 2
        }
        let launch = Self.client(transport, on: device)
        var updates = launch.updates().makeAsyncIterator()
        let first = try #require(try await updates.next())
        #expect(first.source == .cache && first.string("api_keys.stripe") == "sk_live_1")
        await launch.waitForBackgroundRevalidation()
        let second = try #require(try await updates.next())
        #expect(second.revision == 2 && second.string("api_keys.stripe") == "sk_live_2")
    }

    @Test("the app goes to the background: the stream is closed and none opens; back in the foreground one opens at once, without backoff")
    func backgroundAndForeground() async throws {
        let transport = StreamingSesame(ScriptedSesame(), holdOpen: true) { _, sesame in
            let revision = sesame.with { $0.revision }
            return (200, "event: config\nid: \"\(revision)-etag\"\ndata: {}\n\n")
        }
        let device = try DeviceLifecycle()
        let start = device.now
        device.letSleepsPassTime(for: 60)
        let client = Self.client(transport, on: device)
        var updates = client.updates().makeAsyncIterator()
        _ = try await updates.next()
        func until(_ what: String, _ condition: () -> Bool) async throws {
            for _ in 0..<500 where !condition() { try await Task.sleep(for: .milliseconds(2)) }
            #expect(condition(), "\(what)")
        }
        try await until("the stream open") { transport.opened.withLock { $0 } == 1 }

        device.enterBackground()
        try await until("the stream closed for the background") { transport.closed.withLock { $0 } == 1 }
        try await Task.sleep(for: .milliseconds(50))
        #expect(transport.opened.withLock { $0 } == 1, "a stream opened in the background")

        device.enterForeground()
        try await until("a stream open again in the foreground") { transport.opened.withLock { $0 } == 2 }
        let waited = device.now.timeIntervalSince(start)
        #expect(waited == 0, "waited \(waited) s of backoff before reopening")
    }
}

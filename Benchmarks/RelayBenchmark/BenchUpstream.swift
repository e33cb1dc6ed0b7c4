import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import Synchronization

/// The relay benchmark's upstream, in this process: a small JSON answer, a short event stream (its
/// first event at once), and an event stream held open until `releaseAll()` (for memory per stream
/// and the config hot path with streams open).
final class BenchUpstream: Sendable {
    private let released = Atomic(false)
    /// How many held streams have sent their first event and wait.
    let holding = Atomic(0)

    func releaseAll() { released.store(true, ordering: .relaxed) }

    static let small = ByteBuffer(string: #"{"id":"cmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there"}}]}"#)

    func run(_ body: @Sendable (Int) async throws -> Void) async throws {
        let router = Router()
        router.get("base/small") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: Self.small))
        }
        router.get("base/sse") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/event-stream"],
                body: ResponseBody { writer in
                    try await writer.write(ByteBuffer(string: "data: {\"delta\":\"Hel\"}\n\n"))
                    try await writer.write(ByteBuffer(string: "data: [DONE]\n\n"))
                    try await writer.finish(nil)
                })
        }
        router.get("base/held") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/event-stream"],
                body: ResponseBody { writer in
                    try await writer.write(ByteBuffer(string: "data: {\"delta\":\"Hel\"}\n\n"))
                    self.holding.add(1, ordering: .relaxed)
                    defer { self.holding.subtract(1, ordering: .relaxed) }
                    // Polled each second: 500 waiting streams cost 500 wake-ups a second, not a busy loop.
                    while !self.released.load(ordering: .relaxed) { try await Task.sleep(for: .seconds(1)) }
                    try await writer.write(ByteBuffer(string: "data: [DONE]\n\n"))
                    try await writer.finish(nil)
                })
        }
        try await Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0), backlog: 4096))
            .test(.live) { client in try await body(client.port ?? 0) }
    }
}

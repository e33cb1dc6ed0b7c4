import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import NIOFoundationCompat
import Synchronization

/// An LLM provider's chat completions as the walk's relay reaches it: `POST /v1/chat/completions`
/// with its API key, answered as server-sent events, the first at once and the rest only once the
/// walk releases them (so the walk can see the first reach the app before the answer is done).
final class FakeLLM: Sendable {
    static let apiKey = "sk-walk-llm-0123456789abcdef"
    static let words = ["Hel", "lo", " from", " the", " relay"]

    /// Each call's headers, lowercased names, as received.
    let received = Mutex<[[String: String]]>([])
    private let release: AsyncStream<Void>.Continuation
    private let released: AsyncStream<Void>

    init() {
        (released, release) = AsyncStream<Void>.makeStream()
    }

    /// Lets one held stream send the rest of its answer.
    func finishOne() { release.yield() }

    func run(_ body: @Sendable (URL) async throws -> Void) async throws {
        let router = Router()
        router.post("v1/chat/completions") { request, _ -> Response in
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name.canonicalName] = field.value }
            self.received.withLock { $0.append(headers) }
            _ = try await request.body.collect(upTo: 64 * 1024)
            guard request.headers[.authorization] == "Bearer \(Self.apiKey)" else {
                return Response(
                    status: .unauthorized, headers: [.contentType: "application/json"],
                    body: .init(byteBuffer: ByteBuffer(string: #"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}"#)))
            }
            let released = self.released
            return Response(
                status: .ok, headers: [.contentType: "text/event-stream"],
                body: ResponseBody { writer in
                    try await writer.write(ByteBuffer(string: Self.event(Self.words[0])))
                    var waiting = released.makeAsyncIterator()
                    _ = await waiting.next()
                    for word in Self.words.dropFirst() { try await writer.write(ByteBuffer(string: Self.event(word))) }
                    try await writer.write(ByteBuffer(string: "data: [DONE]\n\n"))
                    try await writer.finish(nil)
                })
        }
        try await Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0))).test(.live) { client in
            try await body(URL(string: "http://127.0.0.1:\(client.port ?? 0)")!)
        }
    }

    /// One streamed piece, as OpenAI's chat completions send them.
    static func event(_ content: String) -> String {
        #"data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"\#(content)"}}]}"# + "\n\n"
    }
}

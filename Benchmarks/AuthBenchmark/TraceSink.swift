import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import Synchronization

/// Where auth exports its spans while tracing is measured: accepts `POST /v1/traces` and counts
/// the bytes, so the export's own cost (encoding, sending) is in the figures and a collector's is not.
final class TraceSink: Sendable {
    private let exports = Atomic<Int>(0)
    private let bytes = Atomic<Int>(0)

    /// What it received.
    var summary: String { "\(exports.load(ordering: .relaxed)) exports, \(bytes.load(ordering: .relaxed) / 1024) KiB" }

    func run<Result: Sendable>(_ body: @Sendable (URL) async throws -> Result) async throws -> Result {
        let router = Router()
        router.post("v1/traces") { request, _ -> Response in
            let received = try await request.body.collect(upTo: 64 * 1024 * 1024)
            self.exports.add(1, ordering: .relaxed)
            self.bytes.add(received.readableBytes, ordering: .relaxed)
            return Response(status: .ok)
        }
        return try await Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0))).test(.live) { client in
            try await body(URL(string: "http://127.0.0.1:\(client.port ?? 0)")!)
        }
    }
}

import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import NIOFoundationCompat
import Synchronization

/// An OpenTelemetry collector as small as the walk needs: `POST /v1/traces` in OTLP/HTTP's JSON
/// encoding (the services export to it with `OTEL_EXPORTER_OTLP_PROTOCOL=http/json`), every span
/// kept with its service and replica.
final class TraceCollector: Sendable {
    /// One exported span.
    struct Span: Sendable {
        let service: String
        /// `service.instance.id`: which replica.
        let instance: String
        let traceID: String
        let spanID: String
        let parentID: String
        let name: String
        let kind: String
        /// Every attribute's value as text, the resource's included.
        let attributes: [String: String]
    }

    let spans = Mutex<[Span]>([])
    /// Exports it could not read (the walk fails on any).
    let unreadable = Mutex<[String]>([])

    /// What the services need in their environment to export here, batches sent every 200 ms.
    static func environment(_ url: URL) -> [String: String] {
        ["OTEL_EXPORTER_OTLP_ENDPOINT": url.absoluteString, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json", "OTEL_BSP_SCHEDULE_DELAY": "200"]
    }

    func run(_ body: @Sendable (URL) async throws -> Void) async throws {
        let router = Router()
        router.post("v1/traces") { request, _ -> Response in
            let bytes = try await request.body.collect(upTo: 16 * 1024 * 1024)
            self.record(Data(buffer: bytes))
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: "{}")))
        }
        try await Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0))).test(.live) { client in
            try await body(URL(string: "http://127.0.0.1:\(client.port ?? 0)")!)
        }
    }

    private func record(_ data: Data) {
        guard let export = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            unreadable.withLock { $0.append(String(decoding: data.prefix(200), as: UTF8.self)) }
            return
        }
        var found: [Span] = []
        for resourceSpans in export["resourceSpans"] as? [[String: Any]] ?? [] {
            let resource = Self.attributes((resourceSpans["resource"] as? [String: Any])?["attributes"])
            for scopeSpans in resourceSpans["scopeSpans"] as? [[String: Any]] ?? [] {
                for span in scopeSpans["spans"] as? [[String: Any]] ?? [] {
                    found.append(
                        Span(
                            service: resource["service.name"] ?? "", instance: resource["service.instance.id"] ?? "",
                            traceID: span["traceId"] as? String ?? "", spanID: span["spanId"] as? String ?? "",
                            parentID: span["parentSpanId"] as? String ?? "", name: span["name"] as? String ?? "",
                            kind: "\(span["kind"] ?? "")", attributes: resource.merging(Self.attributes(span["attributes"])) { $1 }))
                }
            }
        }
        spans.withLock { $0.append(contentsOf: found) }
    }

    /// OTLP's `[{key, value: {stringValue | intValue | …}}]`, each value as text.
    private static func attributes(_ list: Any?) -> [String: String] {
        var attributes: [String: String] = [:]
        for attribute in list as? [[String: Any]] ?? [] {
            guard let key = attribute["key"] as? String, let value = attribute["value"] as? [String: Any], let first = value.values.first else { continue }
            attributes[key] = "\(first)"
        }
        return attributes
    }

    /// The spans collected so far.
    var all: [Span] { spans.withLock { $0 } }
    /// The start of each export it could not read.
    var unreadableExports: [String] { unreadable.withLock { $0 } }
}

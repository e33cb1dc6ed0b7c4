import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// Plain HTTP calls to services in other processes.
public enum HTTP {
    public struct Reply: Sendable {
        public let status: Int
        public let headers: [(String, String)]
        public let body: [UInt8]
        public var bodyText: String { String(decoding: body, as: UTF8.self) }
        public var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] }
        public func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
    }

    public static func get(_ url: String, headers: [String: String] = [:]) async throws -> Reply {
        try await send(url, method: .GET, headers: headers)
    }

    public static func post(_ url: String, json: [String: Any], headers: [String: String] = [:]) async throws -> Reply {
        try await send(url, method: .POST, headers: headers.merging(["Content-Type": "application/json"]) { _, new in new },
            body: Array(try JSONSerialization.data(withJSONObject: json)))
    }

    /// Sends the request; once more when the pooled connection it was given had been closed by
    /// the server before the request left (a gateway whose upstream was restarted), never otherwise.
    public static func send(_ url: String, method: HTTPMethod, headers: [String: String] = [:], body: [UInt8]? = nil) async throws -> Reply {
        do {
            return try await sendOnce(url, method: method, headers: headers, body: body)
        } catch ChannelError.ioOnClosedChannel {
            return try await sendOnce(url, method: method, headers: headers, body: body)
        }
    }

    private static func sendOnce(_ url: String, method: HTTPMethod, headers: [String: String], body: [UInt8]?) async throws -> Reply {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let collected = try await response.body.collect(upTo: 64 << 20)
        return Reply(status: Int(response.status.code), headers: response.headers.map { ($0.name, $0.value) }, body: Array(collected.readableBytesView))
    }
}

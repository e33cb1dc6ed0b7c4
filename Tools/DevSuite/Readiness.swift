import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// A service's `/health/ready`, asked as an operator's probe would.
enum Readiness {
    /// The status and body of `GET /health/ready` on `port`; nil when nothing answers within five seconds.
    static func probe(port: Int) async -> (status: UInt, body: String)? {
        let request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/health/ready")
        do {
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(5))
            let body = try await response.body.collect(upTo: 64 * 1024)
            return (response.status.code, String(buffer: body))
        } catch {
            return nil
        }
    }
}

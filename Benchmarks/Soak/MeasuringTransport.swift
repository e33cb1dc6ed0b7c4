import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SesameKit

/// SesameKit's transport for the fleet: AsyncHTTPClient (one connection pool for every device),
/// recording each exchange's endpoint, status and latency.
struct MeasuringTransport: HTTPTransport {
    let recorder: Recorder

    /// The fleet's client. Real devices each have a connection of their own: with the shared
    /// client's eight per host, requests queued inside the fleet while the server answered slow
    /// ones, and the queueing (up to the 15 s timeout) was measured as the server's latency.
    static let client: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 512)
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()

    func send(_ request: HTTPExchange.Request) async throws -> HTTPExchange.Response {
        var outgoing = HTTPClientRequest(url: request.url.absoluteString)
        outgoing.method = HTTPMethod(rawValue: request.method)
        for (name, value) in request.headers { outgoing.headers.add(name: name, value: value) }
        if let body = request.body { outgoing.body = .bytes(ByteBuffer(bytes: body)) }
        let started = recorder.now
        let endpoint = "\(request.method) \(request.url.path)"
        do {
            let response = try await Self.client.execute(outgoing, timeout: .seconds(15))
            let body = try await response.body.collect(upTo: 8 << 20)
            let status = Int(response.status.code)
            recorder.record(.init(at: started, endpoint: endpoint, status: status, milliseconds: (recorder.now - started) * 1000))
            return HTTPExchange.Response(
                status: status, headers: Dictionary(response.headers.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first }),
                body: Data(body.readableBytesView))
        } catch {
            recorder.record(.init(at: started, endpoint: endpoint, status: 0, milliseconds: (recorder.now - started) * 1000))
            throw error
        }
    }
}

import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import OpenAPIHummingbird
import OpenAPIRuntime

// Issue 58 asks whether the services should serve through swift-openapi-generator's handler
// protocol "where the measurements allow". This measures that protocol's own cost: auth's refresh
// operation, generated from auth's document, served (a) by a hand-written Hummingbird route and
// (b) through `APIProtocol.registerHandlers` (swift-openapi-hummingbird), both decoding and
// answering the same generated types with a constant token pair, driven in process through
// Hummingbird's router test client (no sockets), so only the handler path differs. The figure to
// compare it with is a real refresh's cost, from `./sesame-dev bench auth`.

/// The answer both paths give: what a refresh answers, without the work.
let pair = Components.Schemas.TokenPair(
    accessToken: String(repeating: "a", count: 420), refreshToken: String(repeating: "r", count: 300), expiresIn: 900, tier: .attested)

extension Components.Schemas.TokenPair: ResponseEncodable {}

/// The generated protocol's side.
struct GeneratedHandler: APIProtocol {
    func refresh(_ input: Operations.refresh.Input) async throws -> Operations.refresh.Output {
        guard case .json(let body) = input.body, !body.refreshToken.isEmpty else { throw HTTPError(.badRequest) }
        return .ok(.init(headers: .init(X_hyphen_Request_hyphen_Id: "r"), body: .json(pair)))
    }
}

@main
enum HandlerProtocolBenchmark {
    static let body = ByteBuffer(string: #"{"refreshToken":"\#(String(repeating: "t", count: 300))","appVersion":"2.4.1"}"#)

    static func main() async throws {
        let count = Int(ProcessInfo.processInfo.environment["SESAME_BENCH_REQUESTS"] ?? "") ?? 50_000

        let handWritten = Router()
        handWritten.post("/v1/auth/refresh") { request, context -> Components.Schemas.TokenPair in
            let body = try await request.decode(as: Components.Schemas.RefreshRequest.self, context: context)
            guard !body.refreshToken.isEmpty else { throw HTTPError(.badRequest) }
            return pair
        }
        let generated = Router()
        try GeneratedHandler().registerHandlers(on: generated)

        // Warm both once, then alternate rounds so that drift on the machine falls on both.
        var seconds: [String: [Double]] = ["hand-written route": [], "generated handler protocol": []]
        for round in 0..<6 {
            for (label, router) in [("hand-written route", handWritten), ("generated handler protocol", generated)] {
                let elapsed = try await measure(router, count: round == 0 ? count / 10 : count)
                if round > 0 { seconds[label, default: []].append(elapsed) }
            }
        }
        print("auth's refresh, \(count) requests a round, 5 rounds, in process (router test client), constant answer:")
        var best: [String: Double] = [:]
        for label in ["hand-written route", "generated handler protocol"] {
            let fastest = seconds[label]!.min()!
            best[label] = fastest
            let figures = String(format: "%8.1f µs a request (best round), %8.0f requests/s", fastest / Double(count) * 1e6, Double(count) / fastest)
            print("  " + label.padding(toLength: 28, withPad: " ", startingAt: 0) + figures)
        }
        let extra = (best["generated handler protocol"]! - best["hand-written route"]!) / Double(count) * 1e6
        print(String(format: "  the generated protocol costs %.2f× the hand-written route: %+.1f µs a request", best["generated handler protocol"]! / best["hand-written route"]!, extra))
    }

    /// Seconds to answer `count` refreshes through `router`, failing on any answer but 200.
    static func measure(_ router: Router<BasicRequestContext>, count: Int) async throws -> Double {
        let app = Application(router: router)
        return try await app.test(.router) { client in
            let start = ContinuousClock.now
            for _ in 0..<count {
                let response = try await client.execute(uri: "/v1/auth/refresh", method: .post, headers: [.contentType: "application/json"], body: body)
                guard response.status == .ok else { throw HTTPError(.internalServerError, message: "answered \(response.status)") }
            }
            let duration = ContinuousClock.now - start
            return Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        }
    }
}

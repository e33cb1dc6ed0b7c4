@testable import DeliveryService
import Foundation
import Hummingbird
import HummingbirdTesting
import JWTKit
import Logging
import NIOFoundationEssentialsCompat
import SesameDomain
import SesameHTTP
import SesameTestSupport
import Synchronization
import Testing

/// How many requests a test server answered.
final class RequestCount: Sendable {
    private let count = Atomic<Int>(0)
    func increment() { count.add(1, ordering: .relaxed) }
    var value: Int { count.load(ordering: .relaxed) }
}

@Suite("Delivery: identity issuer keys", .timeLimit(.minutes(2)))
struct IdentityKeyCacheTests {
    /// A JWKS endpoint that counts its requests and answers `status`.
    static func withJWKSServer(
        for issuer: TestIssuer, status: HTTPResponse.Status = .ok, delay: Duration = .zero,
        _ body: @Sendable (_ url: String, _ requests: RequestCount) async throws -> Void
    ) async throws {
        let jwks = try JSONSerialization.data(withJSONObject: [
            "keys": [["kty": "EC", "crv": "P-256", "kid": "k1", "alg": "ES256", "use": "sig",
                "x": issuer.key.publicKey.parameters!.x, "y": issuer.key.publicKey.parameters!.y]]
        ])
        let requests = RequestCount()
        let router = Router()
        router.get("jwks.json") { _, _ in
            requests.increment()
            try await Task.sleep(for: delay)
            return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(data: jwks)))
        }
        let server = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await server.test(.live) { client in
            try await body("http://127.0.0.1:\(client.port!)/jwks.json", requests)
        }
    }

    @Test("concurrent requests for an issuer whose keys are not held share one fetch")
    func singleFlight() async throws {
        let issuer = TestIssuer()
        try await Self.withJWKSServer(for: issuer, delay: .milliseconds(200)) { url, requests in
            let cache = IdentityKeyCache(logger: Logger(label: "test"))
            let configured = IdentityIssuer(issuer: issuer.issuer, audiences: [issuer.audience], jwksURL: url)
            let token = try await issuer.token(subject: "dana", kid: "k1")
            try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<20 { group.addTask { try await cache.subject(of: token, issuer: configured) } }
                for try await subject in group { #expect(subject == "dana") }
            }
            #expect(requests.value == 1)
        }
    }

    @Test("an issuer whose JWKS cannot be fetched: 503 identity_issuer_unavailable with Retry-After, not 401")
    func unreachableIssuer() async throws {
        let issuer = TestIssuer()
        try await Self.withJWKSServer(for: issuer, status: .badGateway) { url, requests in
            let cache = IdentityKeyCache(logger: Logger(label: "test"))
            let token = try await issuer.token(subject: "erin", kid: "k1")
            await #expect(throws: IdentityKeyCache.IssuerUnavailable.self) {
                try await cache.subject(of: token, issuer: IdentityIssuer(issuer: issuer.issuer, audiences: [issuer.audience], jwksURL: url))
            }
            #expect(requests.value == 1)

            try await DeliveryHarness.run { harness in
                let access = try await harness.app.attest(with: harness.auth).accessToken
                let policy: [String: Any] = ["identityIssuer": ["issuer": issuer.issuer, "audiences": [issuer.audience], "jwksURL": url]]
                try await harness.setPolicy(policy) { instance in
                    try await harness.userData(.get, identityToken: token, token: access, instance: instance).status == .serviceUnavailable
                }
                let reply = try await harness.deliveries[0].execute(
                    uri: "/v1/user/data", method: .get,
                    headers: [.authorization: "Bearer \(access)", SesameHeaders.identityToken: token]
                ) { ($0.status, $0.headers[.retryAfter], String(buffer: $0.body)) }
                #expect(reply.0 == .serviceUnavailable && reply.1 == "30" && reply.2.contains("identity_issuer_unavailable"), "\(reply.2)")
            }
        }
    }
}

@testable import DeliveryService
import Foundation
import Hummingbird
import HummingbirdTesting
import JWTKit
import Logging
import NIOFoundationEssentialsCompat
import SesameDomain
import SesameHTTP
import SesameConfiguration
import SesameOutbound
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
    /// The delivery harness's outbound policy: the test servers on 127.0.0.1 are an allowed internal host.
    static let outbound = OutboundHTTPClient(
        policy: OutboundAddressPolicy(allowances: [OutboundAllowance(parsing: "jwks=127.0.0.1:*@*")!], allowsPlainHTTPToAllowedHosts: true))

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
            // A redirect points at the cloud metadata address.
            var headers: HTTPFields = [.contentType: "application/json"]
            if (300..<400).contains(status.code) { headers[.location] = "http://169.254.169.254/latest/meta-data/" }
            return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(data: jwks)))
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
            let cache = IdentityKeyCache(outbound: Self.outbound, logger: Logger(label: "test"))
            let configured = IdentityIssuer(issuer: issuer.issuer, audiences: [issuer.audience], jwksURL: url)
            let token = try await issuer.token(subject: "dana", kid: "k1")
            try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<20 { group.addTask { try await cache.subject(of: token, issuer: configured, appID: "app") } }
                for try await subject in group { #expect(subject == "dana") }
            }
            #expect(requests.value == 1)
        }
    }

    @Test("a JWKS that answers slowly: at most 256 requests wait for its fetch, the rest are refused at once; none waits past the client's deadline")
    func boundedWaiting() async throws {
        let issuer = TestIssuer()
        try await Self.withJWKSServer(for: issuer, delay: .seconds(10)) { url, requests in
            let client = OutboundHTTPClient(policy: Self.outbound.policy, timeout: .seconds(2))
            let cache = IdentityKeyCache(outbound: client, logger: Logger(label: "test"))
            let configured = IdentityIssuer(issuer: issuer.issuer, audiences: [issuer.audience], jwksURL: url)
            let token = try await issuer.token(subject: "dana", kid: "k1")
            let start = ContinuousClock.now
            let refusals = try await withThrowingTaskGroup(of: (Bool, Duration).self) { group in
                for _ in 0..<300 {
                    group.addTask {
                        do {
                            _ = try await cache.subject(of: token, issuer: configured, appID: "app")
                            return (false, ContinuousClock.now - start)
                        } catch is IdentityKeyCache.IssuerUnavailable {
                            return (true, ContinuousClock.now - start)
                        }
                    }
                }
                var outcomes: [(Bool, Duration)] = []
                for try await outcome in group { outcomes.append(outcome) }
                return outcomes
            }
            #expect(refusals.allSatisfy { $0.0 }, "a request verified against a JWKS that never arrived")
            #expect(refusals.filter { $0.1 < .seconds(1) }.count >= 300 - 1 - IdentityKeyCache.maximumWaiting, "refused at once: \(refusals.filter { $0.1 < .seconds(1) }.count)")
            #expect(refusals.allSatisfy { $0.1 < .seconds(5) }, "the longest wait: \(refusals.map(\.1).max() ?? .zero)")
            #expect(requests.value == 1)
        }
    }

    @Test("an issuer whose JWKS cannot be fetched: 503 identity_issuer_unavailable with Retry-After, not 401")
    func unreachableIssuer() async throws {
        let issuer = TestIssuer()
        try await Self.withJWKSServer(for: issuer, status: .badGateway) { url, requests in
            let cache = IdentityKeyCache(outbound: Self.outbound, logger: Logger(label: "test"))
            let token = try await issuer.token(subject: "erin", kid: "k1")
            await #expect(throws: IdentityKeyCache.IssuerUnavailable.self) {
                try await cache.subject(of: token, issuer: IdentityIssuer(issuer: issuer.issuer, audiences: [issuer.audience], jwksURL: url), appID: "app")
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

    @Test("a JWKS URL that reaches inside the deployment is refused when configured, and one that resolves inside is never fetched")
    func internalAddressesAreRefused() async throws {
        let issuer = TestIssuer()
        try await Self.withJWKSServer(for: issuer) { url, requests in
            try await DeliveryHarness.run { harness in
                for inside in [
                    "https://169.254.169.254/latest/meta-data/", "https://10.0.0.1/jwks.json", "https://127.0.0.2:8443/jwks.json",
                    "https://[::1]:8443/jwks.json", "https://[::ffff:127.0.0.2]/jwks.json", "https://[fd00::1]/jwks.json",
                    "https://100.64.0.1/jwks.json", "http://issuer.example.com/jwks.json",
                ] {
                    let policy: [String: Any] = ["identityIssuer": ["issuer": issuer.issuer, "audiences": [issuer.audience], "jwksURL": inside]]
                    let refused = try await harness.manageReply(.put, "policy", policy)
                    #expect(refused.status == .badRequest && refused.errorCode == "invalid_request", "\(inside): \(refused.json)")
                }

                // A name is checked when it is fetched: `localhost` resolves to loopback, which only the
                // address 127.0.0.1 is allowed to reach here.
                let port = try #require(URLComponents(string: url)?.port)
                let access = try await harness.app.attest(with: harness.auth).accessToken
                let token = try await issuer.token(subject: "mallory", kid: "k1")
                let byName = "https://localhost:\(port)/jwks.json"
                let policy: [String: Any] = ["identityIssuer": ["issuer": issuer.issuer, "audiences": [issuer.audience], "jwksURL": byName]]
                try await harness.setPolicy(policy) { instance in
                    try await harness.userData(.get, identityToken: token, token: access, instance: instance).status == .serviceUnavailable
                }
                #expect(requests.value == 0, "the JWKS server was called")
            }
        }
    }

    @Test("the JWKS fetch follows no redirect (here one to the metadata address)")
    func redirectsAreNotFollowed() async throws {
        let issuer = TestIssuer()
        try await Self.withJWKSServer(for: issuer, status: .found) { url, requests in
            let cache = IdentityKeyCache(outbound: Self.outbound, logger: Logger(label: "test"))
            let token = try await issuer.token(subject: "oscar", kid: "k1")
            await #expect(throws: IdentityKeyCache.IssuerUnavailable.self) {
                try await cache.subject(of: token, issuer: IdentityIssuer(issuer: issuer.issuer, audiences: [issuer.audience], jwksURL: url), appID: "app")
            }
            #expect(requests.value == 1)
            await #expect(throws: OutboundHTTPClient.Refusal.redirected(status: 302)) {
                try await Self.outbound.get(url, for: OutboundUse(.jwks, appID: "app"), maximumBytes: 1024)
            }
        }
        // And reads no more than it allows.
        try await Self.withJWKSServer(for: issuer) { url, _ in
            await #expect(throws: OutboundHTTPClient.Refusal.tooLarge(limit: 8)) { try await Self.outbound.get(url, for: OutboundUse(.jwks, appID: "app"), maximumBytes: 8) }
        }
    }
}

import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import SesameHTTP
import SesameTestSupport
import Testing

@Suite("Delivery: GET /v1/config on the event loop's fast path", .timeLimit(.minutes(3)))
struct ConfigFastPathTests {
    /// One answer, as the client received it: what must not differ between the two paths.
    struct Answer: Equatable, CustomStringConvertible {
        let status: HTTPResponse.Status
        /// Every header but the request id, which is each answer's own, and the date's value.
        let headers: [String]
        let body: String

        init(_ response: TestResponse) {
            status = response.status
            headers = response.headers.filter { $0.name != SesameHeaders.requestID }
                .map { $0.name == .date ? "Date: present" : "\($0.name): \($0.value)" }.sorted()
            body = String(buffer: response.body)
        }

        var description: String { "\(status.code) \(headers) \(body)" }
    }

    @Test("a token this instance verified before is answered on the fast path, with what the router answers: 200, 304, scope, every refusal")
    func sameAnswersOnBothPaths() async throws {
        try await DeliveryHarness.run { harness in
            _ = try await harness.upload(["api_keys": ["stripe": "sk_1"], "features": ["dark": true]], version: "*")
            let revision = try await harness.upload(["name": "two", "api_keys": ["stripe": "sk_2"]], version: "2.*")
            let probe = try await harness.app.attest(with: harness.auth, appVersion: "2.1.3").accessToken
            try await harness.waitUntilServed(version: "2.1.3", revision: revision, pattern: "2.*", token: probe)
            let etag = try #require(try await harness.fetch(version: "2.1.3", token: probe).headers[.eTag])
            let delivery = harness.deliveries[1]
            let fastAnswersBefore = try await Self.fastPathAnswers(delivery)

            /// The same request twice with a token new to the instance: first through the router
            /// (the token is verified there), then, the token remembered, on the fast path.
            func bothPaths(_ query: String, _ headers: HTTPFields = [:]) async throws -> (routed: Answer, fast: Answer) {
                let token = try await harness.app.attest(with: harness.auth, appVersion: "2.1.3").accessToken
                var headers = headers
                headers[.authorization] = "Bearer \(token)"
                let uri = "/v1/config?\(query)"
                let routed = try await delivery.execute(uri: uri, method: .get, headers: headers) { Answer($0) }
                // A refusal before the token is looked at leaves it unverified: have it verified now.
                _ = try await harness.fetch(version: "2.1.3", token: token, instance: 1)
                let fast = try await delivery.execute(uri: uri, method: .get, headers: headers) { Answer($0) }
                return (routed, fast)
            }

            var expected: [(query: String, headers: HTTPFields, status: HTTPResponse.Status)] = [
                ("version=2.1.3", [:], .ok),
                ("version=2.1.3", [.ifNoneMatch: etag], .notModified),
                ("version=2.1.3&scope=api_keys.stripe", [:], .ok),
                ("version=3.0&scope=features,nothing", [:], .ok),
                ("version=2.x", [:], .badRequest),
                ("version=2.1.3&scope=", [:], .badRequest),
                ("version=2.1.3", [.xForwardedFor: "203.0.113.9"], .ok),
            ]
            for (query, headers, status) in expected {
                let (routed, fast) = try await bothPaths(query, headers)
                #expect(routed.status == status, "\(query): \(routed)")
                #expect(fast == routed, "\(query)")
            }

            try await harness.manage(.post, "kill-switch", ["versions": ["2.1.3"], "enabled": false, "reason": "Update, please."])
            try await eventually("the kill switch reaches the instance") {
                try await harness.fetch(version: "2.1.3", token: probe, instance: 1).errorCode == "version_disabled"
            }
            let killed = try await bothPaths("version=2.1.3")
            #expect(killed.routed.status == .forbidden && killed.routed.body.contains("Update, please."), "\(killed.routed)")
            #expect(killed.fast == killed.routed)
            expected.append(("killed", [:], .forbidden))

            // Each pair's second answer came from the fast path (other tests may add to the count: at least).
            let fastAnswers = try await Self.fastPathAnswers(delivery) - fastAnswersBefore
            #expect(fastAnswers >= expected.count, "fast path answers: \(fastAnswers)")
        }
    }

    /// `sesame_http_fast_path_answers_total` for `route` (the registry is the process's).
    static func fastPathAnswers(_ delivery: any TestClientProtocol, route: String = "/v1/config") async throws -> Int {
        let text = try await delivery.execute(uri: "/metrics", method: .get) { String(buffer: $0.body) }
        let line = text.split(separator: "\n").first {
            $0.hasPrefix("sesame_http_fast_path_answers_total{") && $0.contains("http_route=\"\(route)\"")
        }
        return line.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
    }
}

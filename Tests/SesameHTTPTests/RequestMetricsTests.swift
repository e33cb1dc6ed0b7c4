import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

@testable import SesameHTTP

@Suite("Request metrics")
struct RequestMetricsTests {
    /// A router with the metrics middleware and `/metrics`, and routes whose names are unique to
    /// this test: the Prometheus registry is shared by the whole process.
    static func application(prefix: String) -> some ApplicationProtocol {
        let router = Router()
        router.addMiddleware {
            RequestMetricsMiddleware()
        }
        PrometheusMetrics.register(on: router)
        router.get("\(prefix)/item/{id}") { _, _ in "item" }
        router.get("\(prefix)/gone") { _, _ -> String in throw HTTPError(.gone) }
        router.get("\(prefix)/broken") { _, _ -> String in throw CancellationError() }
        return Application(router: router)
    }

    @Test("each request is counted and timed under its route template, method and status; errors are counted")
    func countsAndTimes() async throws {
        let prefix = "metrics-\(UUID().uuidString.prefix(8).lowercased())"
        try await Self.application(prefix: prefix).test(.router) { client in
            for id in ["a", "b", "c"] {
                try await client.execute(uri: "/\(prefix)/item/\(id)", method: .get) { #expect($0.status == .ok) }
            }
            try await client.execute(uri: "/\(prefix)/gone", method: .get) { #expect($0.status == .gone) }
            try await client.execute(uri: "/\(prefix)/broken", method: .get) { #expect($0.status == .internalServerError) }

            let text = try await client.execute(uri: "/metrics", method: .get) { String(buffer: $0.body) }
            let item = #"http_route="/\#(prefix)/item/{id}""#
            let gone = #"http_route="/\#(prefix)/gone""#
            let broken = #"http_route="/\#(prefix)/broken""#
            #expect(Self.value(in: text, "hb_requests", containing: [item, #"http_response_status_code="200""#]) == 3)
            #expect(Self.value(in: text, "http_server_request_duration_count", containing: [item, #"http_request_method="GET""#]) == 3)
            #expect(Self.value(in: text, "hb_requests", containing: [gone, #"http_response_status_code="410""#]) == 1)
            #expect(Self.value(in: text, "hb_request_errors", containing: [gone, #"error_type="410""#]) == 1)
            #expect(Self.value(in: text, "hb_request_errors", containing: [broken, #"error_type="500""#]) == 1)
            // Failures are timed too; a route that never failed has no error series.
            #expect(Self.value(in: text, "http_server_request_duration_count", containing: [broken, #"="500""#]) == 1)
            #expect(Self.value(in: text, "hb_request_errors", containing: [item]) == nil)
        }
    }

    @Test("standard methods are labelled by name, any other method as _OTHER")
    func methodLabels() {
        #expect(RequestMetrics.label(of: .get) == "GET")
        #expect(RequestMetrics.label(of: .delete) == "DELETE")
        #expect(RequestMetrics.label(of: HTTPRequest.Method("BREW")!) == "_OTHER")
        #expect(RequestMetrics.Route(path: "/x", method: HTTPRequest.Method("A1")!, status: .ok)
            == RequestMetrics.Route(path: "/x", method: HTTPRequest.Method("A2")!, status: .ok))
    }

    /// The value of the first sample of `metric` whose labels contain every string of `labels`.
    static func value(in text: String, _ metric: String, containing labels: [String]) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(metric + "{") && labels.allSatisfy({ line.contains($0) }) {
            return line.split(separator: " ").last.flatMap { Double($0) }
        }
        return nil
    }
}

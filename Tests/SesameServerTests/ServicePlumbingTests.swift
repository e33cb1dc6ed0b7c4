import AdminService
import AuthService
import DeliveryService
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOFoundationEssentialsCompat
import SesameConfiguration
import SesameEvents
import SesameHTTP
import SesameKafka
import SesameServer
import SesameStorage
import SesameTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What every service shares — health, metrics, request ids, JSON errors, body limits — checked on
/// each of the three, running live against a real PostgreSQL.
@Suite("Service plumbing, on every service")
struct ServicePlumbingTests {
    static let services: [any SesameServiceDefinition.Type] = [AuthService.self, DeliveryService.self, AdminService.self]

    static func configuration(databaseURL: String) -> ServiceConfiguration {
        ServiceConfiguration(
            databaseURL: databaseURL,
            kafkaBrokers: (try? TestKafka.brokers()) ?? ["127.0.0.1:9092"],
            masterKey: MasterKeyMaterial(current: Array(repeating: 1, count: 32)),
            port: 0,
            maxBodyBytes: 1024
        )
    }

    @Test("live, ready, request ids, metrics, JSON errors and body limits", arguments: services)
    func plumbing(service: any SesameServiceDefinition.Type) async throws {
        // Auth and delivery are ready once the topics admin's relay creates exist; run alone, no
        // admin has made them on the test broker yet.
        try await KafkaTopicAdministrator(configuration: KafkaConfiguration(brokers: try TestKafka.brokers()))
            .ensureTopics(EventTopic.all, partitions: 3)
        try await TestDatabase.withFreshDatabase { url in
            let app = try service.buildApplication(configuration: Self.configuration(databaseURL: url.connectionString))
            try await app.test(.live) { client in
                try await client.execute(uri: "/health/live", method: .get) { response in
                    #expect(response.status == .ok)
                }

                let ready = try await Self.waitUntilReady(client)
                #expect(ready.status == .ok)
                let readyBody = try Self.json(ready)
                #expect(readyBody["status"] as? String == "ready")
                #expect((readyBody["checks"] as? [String: String])?["postgres"] == "up")
                #expect((readyBody["checks"] as? [String: String])?["migrations"] == "up")

                let firstID = try await client.execute(uri: "/health/live", method: .get) { $0.headers[SesameHeaders.requestID] }
                let secondID = try await client.execute(uri: "/health/live", method: .get) { $0.headers[SesameHeaders.requestID] }
                #expect(firstID?.isEmpty == false)
                #expect(firstID != secondID)

                try await client.execute(uri: "/no/such/route", method: .get) { response in
                    #expect(response.status == .notFound)
                    #expect(response.headers[SesameHeaders.requestID] != nil)
                    let error = try #require(try Self.json(response)["error"] as? [String: String])
                    #expect(error["code"] == "not_found")
                    #expect(error["message"]?.isEmpty == false)
                }

                // A known path under a method it is not served with: 405 naming the methods, not 404.
                try await client.execute(uri: "/health/live", method: .delete) { response in
                    #expect(response.status == .methodNotAllowed)
                    #expect(response.headers[.allow] == "GET")
                    let error = try #require(try Self.json(response)["error"] as? [String: String])
                    #expect(error["code"] == "method_not_allowed")
                }

                try await client.execute(
                    uri: "/health/live", method: .post, headers: [.contentType: "application/json"],
                    body: ByteBuffer(bytes: Array(repeating: UInt8(ascii: "a"), count: 4096))
                ) { response in
                    #expect(response.status == .contentTooLarge)
                    let error = try #require(try Self.json(response)["error"] as? [String: String])
                    #expect(error["code"] == "payload_too_large")
                }

                try await client.execute(uri: "/metrics", method: .get) { response in
                    #expect(response.status == .ok)
                    let text = String(buffer: response.body)
                    #expect(text.contains("http_server_request_duration"))
                    #expect(text.contains(#"http_route="/health/live""#))
                    #expect(text.contains(#"http_response_status_code="200""#))
                }
            }
        }
    }

    @Test("with a metrics port of its own, /metrics is served there alone: the service port answers it 404, the metrics port nothing else")
    func metricsPortOfItsOwn() async throws {
        try await KafkaTopicAdministrator(configuration: KafkaConfiguration(brokers: try TestKafka.brokers()))
            .ensureTopics(EventTopic.all, partitions: 3)
        try await TestDatabase.withFreshDatabase { url in
            var configuration = Self.configuration(databaseURL: url.connectionString)
            let metricsPort = try FreePort.find()
            configuration.metricsPort = metricsPort
            let app = try DeliveryService.buildApplication(configuration: configuration)
            try await app.test(.live) { client in
                _ = try await Self.waitUntilReady(client)
                try await client.execute(uri: "/metrics", method: .get) { #expect($0.status == .notFound) }
                func metrics(_ path: String) async throws -> (status: Int, body: String) {
                    let (body, response) = try await URLSession.shared.data(from: try #require(URL(string: "http://127.0.0.1:\(metricsPort)\(path)")))
                    return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: body, as: UTF8.self))
                }
                let scraped = try await metrics("/metrics")
                #expect(scraped.status == 200 && scraped.body.contains("http_server_request_duration"), "\(scraped.status)")
                for path in ["/health/ready", "/v1/config", "/openapi.json"] {
                    #expect(try await metrics(path).status == 404, "\(path)")
                }
            }
        }
    }

    @Test("with PostgreSQL unreachable, live stays 200 and ready answers 503 naming postgres", arguments: services)
    func readinessReportsDatabaseDown(service: any SesameServiceDefinition.Type) async throws {
        // Port 1 on loopback: nothing listens there, connections are refused at once.
        let app = try service.buildApplication(configuration: Self.configuration(databaseURL: "postgres://sesame@127.0.0.1:1/sesame"))
        try await app.test(.live) { client in
            try await client.execute(uri: "/health/live", method: .get) { response in
                #expect(response.status == .ok)
            }
            let started = ContinuousClock.now
            try await client.execute(uri: "/health/ready", method: .get) { response in
                #expect(response.status == .serviceUnavailable)
                let body = try Self.json(response)
                #expect(body["status"] as? String == "unavailable")
                #expect((body["checks"] as? [String: String])?["postgres"] == "down")
            }
            #expect(ContinuousClock.now - started < .seconds(5))

            // A request only PostgreSQL can answer says "retry later", not "internal error".
            guard let (uri, method, headers) = Self.databaseBoundRequest(for: service) else { return }
            let requested = ContinuousClock.now
            try await client.execute(uri: uri, method: method, headers: headers) { response in
                #expect(response.status == .serviceUnavailable)
                #expect(response.headers[.retryAfter] == "5")
                let error = try #require(try Self.json(response)["error"] as? [String: String])
                #expect(error["code"] == "service_unavailable")
            }
            // Not the pool's minute of retries (loose: the suite runs in parallel on 2 cores).
            #expect(ContinuousClock.now - requested < .seconds(15))
        }
    }

    @Test("a connection that sends half a head, a byte at a time, or nothing after its answers, is closed after the idle timeout; one whose requests keep coming (answered by the fast path or the router) is kept")
    func idleConnections() async throws {
        try await KafkaTopicAdministrator(configuration: KafkaConfiguration(brokers: try TestKafka.brokers()))
            .ensureTopics(EventTopic.all, partitions: 3)
        try await TestDatabase.withFreshDatabase { url in
            var configuration = Self.configuration(databaseURL: url.connectionString)
            configuration.idleTimeout = .seconds(2)
            let app = try DeliveryService.buildApplication(configuration: configuration)
            try await app.test(.live) { client in
                _ = try await Self.waitUntilReady(client)
                let port = try #require(client.port)
                let dripping = try await RawConnection(port: port)
                try await dripping.send("GET /health/live HTTP/1.1\r\nHost: sesame\r\n")
                let started = ContinuousClock.now
                while dripping.isOpen, ContinuousClock.now - started < .seconds(30) {
                    try? await dripping.send("X")
                    try await Task.sleep(for: .milliseconds(200))
                }
                #expect(!dripping.isOpen, "a head dripping a byte every 200 ms was kept 30 s")

                let busy = try await RawConnection(port: port)
                // The test's own gaps are measured: on a loaded machine one can outlast the timeout, and
                // then a close is right.
                var (last, longestGap) = (ContinuousClock.now, Duration.zero)
                for index in 0..<25 {
                    let path = index.isMultiple(of: 2) ? "/v1/config?version=1.0" : "/health/live"
                    try? await busy.send("GET \(path) HTTP/1.1\r\nHost: sesame\r\nAuthorization: Bearer header.claims.signature\r\n\r\n")
                    try await Task.sleep(for: .milliseconds(200))
                    longestGap = max(longestGap, ContinuousClock.now - last)
                    last = .now
                }
                #expect(busy.isOpen || longestGap >= .seconds(2), "a connection with a request every 200 ms was closed")
                try await eventually(timeout: .seconds(30), "the busy connection, idle, is closed") { !busy.isOpen }
            }
        }
    }

    /// A request each service cannot answer without PostgreSQL. For delivery, which serves configs
    /// from memory: a config request before the instance has ever loaded the token signing keys.
    static func databaseBoundRequest(for service: any SesameServiceDefinition.Type) -> (String, HTTPRequest.Method, HTTPFields)? {
        switch service.name {
        case DeliveryService.name:
            return ("/v1/config?version=1.0", .get, [.authorization: "Bearer header.claims.signature"])
        case AuthService.name:
            return ("/v1/auth/challenge", .post, [:])
        case AdminService.name:
            let wellFormedKey = "sk_prod_" + String(repeating: "A", count: 43)
            return ("/v1/admin/audit", .get, [.authorization: "Bearer \(wellFormedKey)"])
        default:
            return nil
        }
    }

    static func waitUntilReady(_ client: some TestClientProtocol) async throws -> TestResponse {
        var response = try await client.execute(uri: "/health/ready", method: .get)
        for _ in 0..<50 where response.status != .ok {
            try await Task.sleep(for: .milliseconds(200))
            response = try await client.execute(uri: "/health/ready", method: .get)
        }
        return response
    }

    static func json(_ response: TestResponse) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any])
    }
}


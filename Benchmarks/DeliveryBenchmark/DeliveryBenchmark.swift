import AdminService
import AppAttestTesting
import AuthService
import BenchmarkSupport
import DeliveryService
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import NIOFoundationEssentialsCompat
import NIOPosix
import SesameConfiguration
import SesameDomain
import SesameLogging
import SesameServer
import SesameStorage
import SesameTestSupport
import SwiftASN1

// Measures sesame-delivery's hot path against nginx serving the same JSON as a static file, with
// wrk at 64 and 256 connections, in one run on this machine; then the propagation latency of an
// upload through admin to two delivery instances. Runs against the PostgreSQL and broker that
// `./sesame-dev bench delivery` started. Access logs are off on both sides.

let operatorToken = "benchmark-operator-token-0123456789abcdef"
let (teamID, bundleID) = ("BENCHTEAM1", "com.example.bench")
let logger: Logger = {
    var logger = Logger(label: "delivery-benchmark")
    logger.logLevel = .warning
    return logger
}()

/// The config an app gets: about 1 KiB, nested, like a real set of keys and flags.
func sampleConfig() -> [String: Any] {
    [
    "api_keys": ["stripe": "sk_live_" + String(repeating: "a", count: 100), "maps": String(repeating: "m", count: 64), "analytics": "an_123"],
    "endpoints": ["api": "https://api.example.com/v2", "cdn": "https://cdn.example.com", "ws": "wss://ws.example.com"],
    "features": ["dark_mode": true, "new_checkout": false, "max_upload_mb": 50, "ratio": 0.25],
    "copy": ["welcome": String(repeating: "Welcome to the app. ", count: 20)],
    ]
}

@main
enum DeliveryBenchmark {
    static func main() async throws {
        // The services' own log handler, as in production: swift-log's default one re-renders its
        // metadata whenever a request sets its id, which would bill every request for it.
        SesameLogging.bootstrap(json: true, level: .warning)
        try await benchmark()
    }

    nonisolated static func benchmark() async throws {
        measurePlacement()
        let attester = try SoftwareAttester()
        try await TestDatabase.withFreshDatabase { url in
            let configuration = ServiceConfiguration(
                databaseURL: url.connectionString, kafkaBrokers: try TestKafka.brokers(), kafkaIdempotence: false,
                masterKey: MasterKeyMaterial(current: (0..<32).map { _ in UInt8.random(in: 0...255) }), port: 0, logLevel: .warning,
                appAttestExtraRootsPEM: try attester.rootCertificate.serializeAsPEM().pemString,
                // wrk sends one install's token from one address: the per-key and per-client limits would measure themselves.
                requestRatePerKey: 1_000_000, requestRatePerClient: 1_000_000, operatorToken: operatorToken)
            try await AdminService.buildApplication(configuration: configuration, logger: logger).test(.live) { admin in
                try await AuthService.buildApplication(configuration: configuration, logger: logger).test(.live) { auth in
                    try await DeliveryService.buildApplication(configuration: configuration, logger: logger).test(.live) { first in
                        try await DeliveryService.buildApplication(configuration: configuration, logger: logger).test(.live) { second in
                            for client in [admin, auth, first, second] {
                                try await eventually(timeout: .seconds(60), "ready") {
                                    try await client.execute(uri: "/health/ready", method: .get) { $0.status == .ok }
                                }
                            }
                            try await run(admin: admin, auth: auth, deliveries: [first, second], attester: attester)
                        }
                    }
                }
            }
        }
    }

    static func run(
        admin: any TestClientProtocol, auth: any TestClientProtocol, deliveries: [any TestClientProtocol], attester: SoftwareAttester
    ) async throws {
        let key = try await Management(admin: admin, key: operatorToken).createKey(teamID: teamID, bundleID: bundleID)
        let management = Management(admin: admin, key: key)
        let token = try await SoftwareApp(attester: attester, teamID: teamID, bundleID: bundleID).attest(with: auth, appVersion: "2.1.3").accessToken
        let revision = try await management.upload(sampleConfig())
        let served = try await waitForRevision(revision, at: deliveries, token: token, timeout: .seconds(30))

        // The same bytes from nginx, on its own port.
        let nginx = try StaticServer(body: served)
        defer { nginx.stop() }
        guard let port = deliveries[0].port else { throw BenchmarkFailure("no delivery port") }
        let path = "/v1/config?version=2.1.3"
        // Hummingbird alone, one route answering the same bytes, no middleware: the framework's floor.
        let bare = Router()
        let servedBuffer = ByteBuffer(bytes: served)
        bare.get("v1/config") { _, _ in Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: servedBuffer)) }
        let nginxPort = nginx.port
        try await Application(router: bare, logger: logger).test(.live) { bareClient in
            guard let barePort = bareClient.port else { throw BenchmarkFailure("no port") }
            try measureServing(path: path, delivery: port, nginx: nginxPort, bareHummingbird: barePort, token: token)
        }

        // Propagation: upload acknowledged → both instances serve the new revision.
        var latencies: [Duration] = []
        var lastRevision = revision
        for round in 1...100 {
            var next = sampleConfig()
            next["round"] = round
            let started = ContinuousClock.now
            let revision = try await management.upload(next)
            _ = try await waitForRevision(revision, at: deliveries, token: token, timeout: .seconds(10))
            latencies.append(ContinuousClock.now - started)
            lastRevision = revision
        }
        latencies.sort()
        let milliseconds = { (duration: Duration) in Double(duration.components.attoseconds) / 1e15 + Double(duration.components.seconds) * 1000 }
        print(String(format: "propagation to both instances over 100 uploads: p50 %.0f ms, p99 %.0f ms, max %.0f ms",
            milliseconds(latencies[49]), milliseconds(latencies[98]), milliseconds(latencies[99])))

        // The hot path with a staged rollout of the served pattern in flight, against the same
        // path measured just before it starts: every answer then places the install in or out of
        // it (a SHA-256 over the rollout's seed and the key id).
        let authorization = ["Authorization: Bearer \(token)"]
        let plain = try [64, 256].map { (connections: $0, requestsPerSecond: try measure("http://127.0.0.1:\(port)\(path)", connections: $0, headers: authorization).requestsPerSecond) }
        let staged = try await management.call("config/upload", ["version": "*", "config": sampleConfig(), "rollout": 50])
        guard let stagedRevision = staged["revision"] as? Int else { throw BenchmarkFailure("rollout refused: \(staged)") }
        _ = try await waitForRevision(stagedRevision, orPrevious: lastRevision, at: deliveries, token: token, timeout: .seconds(10))
        for (connections, without) in plain {
            let with = try measure("http://127.0.0.1:\(port)\(path)", connections: connections, headers: authorization)
            print(String(format: "delivery GET /v1/config with a rollout in flight, %d connections: %.0f req/s, p99 %@ (%.2f× without)", connections,
                with.requestsPerSecond, with.p99, with.requestsPerSecond / without))
        }
    }

    /// What placing one install in a rollout costs (its bucket and mark: one SHA-256), on one core.
    static func measurePlacement() {
        var generator = SystemRandomNumberGenerator()
        let installs = (0..<1_000).map { _ in Base64.urlEncode((0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }) }
        let rollout = Rollout<Int>(id: UUID(), appID: "\(teamID).\(bundleID)", basisPoints: 5_000, salt: "0123456789abcdef0123456789abcdef", paused: false, previous: nil)
        let rounds = 1_000_000
        var included = 0
        let started = ContinuousClock.now
        for round in 0..<rounds where rollout.place(install: installs[round % installs.count]).included { included += 1 }
        let elapsed = ContinuousClock.now - started
        let nanoseconds = (Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9) / Double(rounds)
        print(String(format: "rollout placement (SHA-256 of the seed and a key id): %.0f ns each, %.1f %% included", nanoseconds, Double(included) / Double(rounds) * 100))
    }

    /// wrk against delivery, nginx and bare Hummingbird in turn, at 64 and 256 connections.
    static func measureServing(path: String, delivery port: Int, nginx nginxPort: Int, bareHummingbird: Int, token: String) throws {
        for connections in [64, 256] {
            let sesame = try measure("http://127.0.0.1:\(port)\(path)", connections: connections, headers: ["Authorization: Bearer \(token)"])
            let reference = try measure("http://127.0.0.1:\(nginxPort)\(path)", connections: connections)
            print(String(format: "delivery GET /v1/config, %d connections: %.0f req/s, p50 %@, p99 %@ (non-2xx: %d)", connections,
                sesame.requestsPerSecond, sesame.p50, sesame.p99, sesame.non2xx))
            print(String(format: "nginx static file,       %d connections: %.0f req/s, p50 %@, p99 %@", connections,
                reference.requestsPerSecond, reference.p50, reference.p99))
            print(String(format: "ratio delivery / nginx at %d connections: %.2f", connections, sesame.requestsPerSecond / reference.requestsPerSecond))
            // The same server's cheapest route: what Hummingbird and Sesame's middleware cost alone.
            let floor = try measure("http://127.0.0.1:\(port)/health/live", connections: connections)
            print(String(format: "delivery GET /health/live, %d connections: %.0f req/s, p99 %@", connections, floor.requestsPerSecond, floor.p99))
            let framework = try measure("http://127.0.0.1:\(bareHummingbird)\(path)", connections: connections)
            print(String(format: "bare Hummingbird, same bytes, %d connections: %.0f req/s, p99 %@ (delivery / bare: %.2f)", connections,
                framework.requestsPerSecond, framework.p99, sesame.requestsPerSecond / framework.requestsPerSecond))
        }
    }

    /// wrk for 10 s at `connections`, two threads.
    static func measure(_ url: String, connections: Int, headers: [String] = []) throws -> Wrk.Figures {
        try Wrk.run(["-t2", "-c\(connections)", "-d10s", "--latency"] + headers.flatMap { ["-H", $0] } + [url]).0
    }

    /// Polls every instance until it serves `revision` (or, for an install outside a rollout of
    /// it, `previous` within that rollout); returns the body served.
    static func waitForRevision(
        _ revision: Int, orPrevious previous: Int? = nil, at deliveries: [any TestClientProtocol], token: String, timeout: Duration
    ) async throws -> [UInt8] {
        var body: [UInt8] = []
        for delivery in deliveries {
            try await eventually(timeout: timeout, pollEvery: .milliseconds(5), "revision \(revision) served") {
                try await delivery.execute(uri: "/v1/config?version=2.1.3", method: .get, headers: [.authorization: "Bearer \(token)"]) { response in
                    let bytes = Array(response.body.readableBytesView)
                    let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
                    let servedRevision = object?["revision"] as? Int
                    guard servedRevision == revision || (object?["rollout"] != nil && servedRevision == previous) else { return false }
                    body = bytes
                    return true
                }
            }
        }
        return body
    }
}

import AdminService
import AppAttestTesting
import AsyncHTTPClient
import AuthService
import BenchmarkSupport
import Foundation
import HTTPTypes
import HummingbirdTesting
import Logging
import NIOCore
import NIOHTTP1
import NIOFoundationCompat
import SesameConfiguration
import SesameLogging
import SesameServer
import SesameStorage
import SesameTestSupport
import SwiftASN1
import Synchronization

// What an attested relay adds (issue 60), against a release `sesame-delivery` of its own and an
// upstream in this process: latency over calling the upstream directly at a fixed 1,000 requests a
// second (open loop), time to the first byte of a streamed answer, resident memory per open relay
// stream (500 by default, or the count given), and `GET /v1/config`'s throughput without and with
// them open. Goals: ≤ 1 ms p50 and ≤ 5 ms p99 added; first byte ≤ 2 ms added; ≤ 64 KiB a stream;
// the config within 10 %. Admin and auth run in this process; the relay has no quota (the quotas'
// cost is a lock and, once a window per replica, a read).

let operatorToken = "benchmark-operator-token-0123456789abcdef"
let (teamID, bundleID) = ("BENCHTEAM1", "com.example.relay")
let logger: Logger = {
    var logger = Logger(label: "relay-benchmark")
    logger.logLevel = .warning
    return logger
}()

@main
enum RelayBenchmark {
    /// Installs whose tokens the calls share: each may hold 8 relay calls open at once.
    static let installs = 100

    static func main() async throws {
        SesameLogging.bootstrap(json: true, level: .warning)
        let streams = CommandLine.arguments.dropFirst().compactMap { Int($0) }.first ?? 500
        let delivery = try ServiceProcess.releaseDelivery()
        guard streams <= installs * 8 else { throw BenchmarkFailure("at most \(installs * 8) streams (8 open calls an install)") }
        let upstream = BenchUpstream()
        try await upstream.run { port in try await run(streams: streams, delivery: delivery, upstream: upstream, upstreamPort: port) }
    }

    static func run(streams: Int, delivery: URL, upstream: BenchUpstream, upstreamPort: Int) async throws {
        let attester = try SoftwareAttester()
        let masterKey = (0..<32).map { _ in UInt8.random(in: 0...255) }
        try await TestDatabase.withFreshDatabase { url in
            var settings = ServiceConfiguration(
                databaseURL: url.connectionString, kafkaBrokers: try TestKafka.brokers(), kafkaIdempotence: false,
                masterKey: MasterKeyMaterial(current: masterKey), port: 0, logLevel: .warning,
                appAttestExtraRootsPEM: try attester.rootCertificate.serializeAsPEM().pemString, operatorToken: operatorToken,
                outboundAllowances: try OutboundAllowance.parseList("relay=127.0.0.1:*@*"))
            // A hundred installs attest from this one address.
            settings.attestRatePerClient = 1_000_000
            settings.attestAdmissionRate = 1_000_000
            let configuration = settings
            try await AdminService.buildApplication(configuration: configuration, logger: logger).test(.live) { admin in
                try await AuthService.buildApplication(configuration: configuration, logger: logger).test(.live) { auth in
                    for client in [admin, auth] {
                        try await eventually(timeout: .seconds(60), "ready") {
                            try await client.execute(uri: "/health/ready", method: .get) { $0.status == .ok }
                        }
                    }
                    let key = try await Management(admin: admin, key: operatorToken).createKey(teamID: teamID, bundleID: bundleID)
                    var tokens: [String] = []
                    for _ in 0..<installs {
                        tokens.append(try await SoftwareApp(attester: attester, teamID: teamID, bundleID: bundleID)
                            .attest(with: auth, appVersion: "2.1.3").accessToken)
                    }
                    _ = try await Management(admin: admin, key: key).upload(["features": ["chat": true], "round": 0])
                    let relay: [String: Any] = [
                        "upstream": "http://127.0.0.1:\(upstreamPort)/base", "methods": ["GET"], "paths": ["/small", "/sse", "/held"],
                        "headers": ["Authorization": "Bearer sk-bench-0123456789"], "timeoutSeconds": 300,
                    ]
                    let status = try await admin.execute(
                        uri: "/v1/admin/relays/bench", method: .put, headers: [.authorization: "Bearer \(key)", .contentType: "application/json"],
                        body: ByteBuffer(data: try JSONSerialization.data(withJSONObject: relay))
                    ) { $0.status }
                    guard status == .ok else { throw BenchmarkFailure("the relay was refused: \(status)") }
                    let process = try ServiceProcess(
                        executable: delivery, name: "delivery", port: 26_900 + Int(getpid() % 90),
                        environment: [
                            "SESAME_DATABASE_URL": url.connectionString, "SESAME_KAFKA_BROKERS": try TestKafka.brokers().joined(separator: ","),
                            "SESAME_KAFKA_IDEMPOTENCE": "off", "SESAME_MASTER_KEY": Data(masterKey).base64EncodedString(),
                            "SESAME_LOG_LEVEL": "warning", "SESAME_ENVIRONMENT": "development", "SESAME_OUTBOUND_ALLOWED_HOSTS": "relay=127.0.0.1:*@*",
                            // A few installs on one address: the limits would measure themselves.
                            "SESAME_REQUEST_RATE_PER_KEY": "1000000", "SESAME_REQUEST_RATE_PER_CLIENT": "1000000",
                        ],
                        log: FileManager.default.temporaryDirectory.appendingPathComponent("sesame-relay-delivery.log"))
                    defer { process.stop() }
                    try await process.waitUntilReady(timeout: .seconds(120))
                    try await measure(
                        streams: streams, delivery: process, upstream: upstream, upstreamBase: "http://127.0.0.1:\(upstreamPort)/base", tokens: tokens)
                }
            }
        }
    }

    static func measure(streams: Int, delivery: ServiceProcess, upstream: BenchUpstream, upstreamBase: String, tokens: [String]) async throws {
        let relayBase = delivery.baseURL + "/v1/relay/bench"
        try await eventually(timeout: .seconds(30), "the relay is served") {
            try await HTTP.get(relayBase + "/small", headers: ["Authorization": "Bearer \(tokens[0])"]).status == 200
        }
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 1024)
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        do {
            try await measure(with: client, streams: streams, delivery: delivery, upstream: upstream, upstreamBase: upstreamBase, relayBase: relayBase, tokens: tokens)
        } catch {
            try? await client.shutdown()
            throw error
        }
        try await client.shutdown()
    }

    static func measure(
        with client: HTTPClient, streams: Int, delivery: ServiceProcess, upstream: BenchUpstream, upstreamBase: String, relayBase: String,
        tokens: [String]
    ) async throws {
        let bearer = [("Authorization", "Bearer \(tokens[0])")]

        print("| relay, one delivery replica | figure |\n| --- | ---: |")
        // The installs in turn: one install may hold 8 calls open, and the load is many installs'.
        let installs: @Sendable (Int) -> [(String, String)] = { index in [("Authorization", "Bearer \(tokens[index % tokens.count])")] }
        // Warm both paths (connections, the relay's pooled upstream client).
        _ = await OpenLoop.run(client, url: upstreamBase + "/small", headers: { _ in [] }, rate: 500, seconds: 2)
        _ = await OpenLoop.run(client, url: relayBase + "/small", headers: installs, rate: 500, seconds: 2)
        let direct = await OpenLoop.run(client, url: upstreamBase + "/small", headers: { _ in [] }, rate: 1000, seconds: 10)
        let relayed = await OpenLoop.run(client, url: relayBase + "/small", headers: installs, rate: 1000, seconds: 10)
        row("GET the upstream directly, 1,000 req/s for 10 s", latencies(direct))
        row("GET through the relay, 1,000 req/s for 10 s", latencies(relayed))
        row("added by the relay", "p50 \(format(relayed.percentile(0.5) - direct.percentile(0.5), digits: 2)) ms, p99 \(format(relayed.percentile(0.99) - direct.percentile(0.99), digits: 2)) ms")

        let directFirst = try await OpenLoop.firstByte(client, url: upstreamBase + "/sse", headers: [], count: 300)
        let relayedFirst = try await OpenLoop.firstByte(client, url: relayBase + "/sse", headers: bearer, count: 300)
        row("first byte of a streamed answer, directly (300, one at a time)", latencies(directFirst))
        row("first byte of a streamed answer, through the relay", latencies(relayedFirst))
        row("added to the first byte", "p50 \(format(relayedFirst.percentile(0.5) - directFirst.percentile(0.5), digits: 2)) ms, p99 \(format(relayedFirst.percentile(0.99) - directFirst.percentile(0.99), digits: 2)) ms")

        // The config hot path, then the same with the streams open.
        let configPath = delivery.baseURL + "/v1/config?version=2.1.3"
        _ = try Wrk.run(["-t1", "-c64", "-d2s", "-H", "Authorization: Bearer \(tokens[0])", configPath])
        try await Task.sleep(for: .seconds(2))
        let idleRSS = delivery.residentMiB
        let without = try Wrk.run(["-t1", "-c64", "-d10s", "--latency", "-H", "Authorization: Bearer \(tokens[0])", configPath]).0

        let opened = try await withThrowingTaskGroup(of: Void.self) { group -> Int in
            let firstEvents = AsyncStream<Void>.makeStream()
            for index in 0..<streams {
                let token = tokens[index % tokens.count]
                group.addTask {
                    var request = HTTPClientRequest(url: relayBase + "/held")
                    request.headers.add(name: "Authorization", value: "Bearer \(token)")
                    let response = try await client.execute(request, timeout: .seconds(600))
                    var body = response.body.makeAsyncIterator()
                    guard response.status == .ok, try await body.next() != nil else { throw BenchmarkFailure("a relay stream was refused: \(response.status)") }
                    firstEvents.continuation.yield()
                    while try await body.next() != nil {}
                }
            }
            var open = 0
            for await _ in firstEvents.stream {
                open += 1
                if open == streams { break }
            }
            try await Task.sleep(for: .seconds(2))
            let openRSS = delivery.residentMiB
            let metrics = try await delivery.metrics()
            row("relay streams open (delivery's sesame_relay_open_calls; upstream holding)",
                "\(open) (\(Int(metrics["sesame_relay_open_calls"] ?? -1)); \(upstream.holding.load(ordering: .relaxed)))")
            row("RSS without → with them", "\(format(idleRSS)) → \(format(openRSS)) MiB (\(format((openRSS - idleRSS) * 1024 / Double(streams))) KiB a stream)")
            let with = try Wrk.run(["-t1", "-c64", "-d10s", "--latency", "-H", "Authorization: Bearer \(tokens[0])", configPath]).0
            row("GET /v1/config, 64 connections, without relay streams", "\(format(without.requestsPerSecond)) req/s, p99 \(without.p99)")
            row("GET /v1/config, 64 connections, with \(streams) relay streams open",
                "\(format(with.requestsPerSecond)) req/s, p99 \(with.p99) (ratio to without \(format(with.requestsPerSecond / without.requestsPerSecond, digits: 3)))")
            guard without.non2xx == 0, with.non2xx == 0 else { throw BenchmarkFailure("non-2xx replies to GET /v1/config: \(without.non2xx), \(with.non2xx)") }
            upstream.releaseAll()
            try await group.waitForAll()
            return open
        }
        try await Task.sleep(for: .seconds(2))
        row("after the \(opened) streams ended: RSS, open relay calls",
            "\(format(delivery.residentMiB)) MiB, \(Int(try await delivery.metrics()["sesame_relay_open_calls"] ?? -1))")
    }

    static func latencies(_ figures: OpenLoop.Latencies) -> String {
        "p50 \(format(figures.percentile(0.5), digits: 2)) ms, p99 \(format(figures.percentile(0.99), digits: 2)) ms (\(figures.milliseconds.count) answered, \(figures.failures) failed)"
    }

    static func row(_ label: String, _ figure: String) {
        print("| \(label) | \(figure) |")
        fflush(nil)
    }

    static func format(_ value: Double, digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }
}

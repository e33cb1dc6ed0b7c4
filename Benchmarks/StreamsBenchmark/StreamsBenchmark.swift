import AdminService
import AppAttestTesting
import AuthService
import BenchmarkSupport
import Foundation
import HTTPTypes
import HummingbirdTesting
import Logging
import SesameConfiguration
import SesameLogging
import SesameServer
import SesameStorage
import SesameTestSupport
import SwiftASN1

// What one delivery replica holds per open live-config stream (`GET /v1/config/updates`), and how
// fast a change and a kill switch reach every stream: 10,000 streams by default (or the count
// given as the argument) opened against a release `sesame-delivery` process of its own; its
// resident memory and file descriptors before and with them, its CPU while they idle, wrk's
// `GET /v1/config` throughput without and with them, then an upload and a kill switch timed from
// admin's acknowledgement to each stream's event. Admin and auth run in this process.
// `SESAME_BENCH_DELIVERY=script` starts that instead of the release delivery (to profile it).

let operatorToken = "benchmark-operator-token-0123456789abcdef"
let (teamID, bundleID) = ("BENCHTEAM1", "com.example.streams")
let logger: Logger = {
    var logger = Logger(label: "streams-benchmark")
    logger.logLevel = .warning
    return logger
}()

@main
enum StreamsBenchmark {
    /// Distinct installs whose tokens the streams share: each stream's token is checked at every
    /// notice as a real install's would be.
    static let installs = 50

    static func main() async throws {
        SesameLogging.bootstrap(json: true, level: .warning)
        let streams = CommandLine.arguments.dropFirst().compactMap { Int($0) }.first ?? 10_000
        let delivery = try ServiceProcess.releaseDelivery()
        try await run(streams: streams, delivery: delivery)
    }

    nonisolated static func run(streams: Int, delivery: URL) async throws {
        let attester = try SoftwareAttester()
        let masterKey = (0..<32).map { _ in UInt8.random(in: 0...255) }
        try await TestDatabase.withFreshDatabase { url in
            let configuration = ServiceConfiguration(
                databaseURL: url.connectionString, kafkaBrokers: try TestKafka.brokers(), kafkaIdempotence: false,
                masterKey: MasterKeyMaterial(current: masterKey), port: 0, logLevel: .warning,
                appAttestExtraRootsPEM: try attester.rootCertificate.serializeAsPEM().pemString, operatorToken: operatorToken)
            try await AdminService.buildApplication(configuration: configuration, logger: logger).test(.live) { admin in
                try await AuthService.buildApplication(configuration: configuration, logger: logger).test(.live) { auth in
                    for client in [admin, auth] {
                        try await eventually(timeout: .seconds(60), "ready") {
                            try await client.execute(uri: "/health/ready", method: .get) { $0.status == .ok }
                        }
                    }
                    let management = Management(admin: admin, key: try await Management(admin: admin, key: operatorToken).createKey(
                        teamID: teamID, bundleID: bundleID))
                    var tokens: [String] = []
                    for _ in 0..<installs {
                        tokens.append(try await SoftwareApp(attester: attester, teamID: teamID, bundleID: bundleID)
                            .attest(with: auth, appVersion: "2.1.3").accessToken)
                    }
                    _ = try await management.upload(sampleConfig(round: 0))
                    let process = try ServiceProcess(
                        executable: delivery, name: "delivery", port: 26_800 + Int(getpid() % 500),
                        environment: [
                            "SESAME_DATABASE_URL": url.connectionString, "SESAME_KAFKA_BROKERS": try TestKafka.brokers().joined(separator: ","),
                            "SESAME_KAFKA_IDEMPOTENCE": "off", "SESAME_MASTER_KEY": Data(masterKey).base64EncodedString(),
                            "SESAME_LOG_LEVEL": "warning",
                            // wrk and the fleet are a few installs on one address: the limits would measure themselves.
                            "SESAME_REQUEST_RATE_PER_KEY": "1000000", "SESAME_REQUEST_RATE_PER_CLIENT": "1000000",
                            "SESAME_STREAMS_PER_INSTALL": "1000000", "SESAME_STREAMS_PER_ADDRESS": "1000000",
                            "SESAME_STREAMS_PER_REPLICA": "1000000",
                        ],
                        log: FileManager.default.temporaryDirectory.appendingPathComponent("sesame-streams-delivery.log"))
                    defer { process.stop() }
                    try await process.waitUntilReady(timeout: .seconds(120))
                    try await measure(streams: streams, delivery: process, management: management, tokens: tokens)
                }
            }
        }
    }

    static let configPath = "/v1/config?version=2.1.3"

    /// wrk on `GET /v1/config` for 10 s (one thread: the other core is delivery's).
    static func hotPath(_ delivery: ServiceProcess, token: String, seconds: Int = 10) throws -> Wrk.Figures {
        try Wrk.run(["-t1", "-c64", "-d\(seconds)s", "--latency", "-H", "Authorization: Bearer \(token)", delivery.baseURL + configPath]).0
    }

    static func measure(streams: Int, delivery: ServiceProcess, management: Management, tokens: [String]) async throws {
        // Without streams.
        _ = try hotPath(delivery, token: tokens[0], seconds: 2)  // warm-up
        let idle = (rss: delivery.residentMiB, fds: openFiles(of: delivery.pid))
        let without = try hotPath(delivery, token: tokens[0])
        print("| delivery, one replica | figure |\n| --- | ---: |")
        row("GET /v1/config, 64 connections, without streams", "\(format(without.requestsPerSecond)) req/s, p99 \(without.p99)")

        // Open them all; each has its first `config` event when it counts as open.
        let fleet = EventStreamFleet()
        do {
            try await measure(with: fleet, streams: streams, delivery: delivery, management: management, tokens: tokens, without: without, idle: idle)
        } catch {
            try? await fleet.close()
            throw error
        }
    }

    static func measure(
        with fleet: EventStreamFleet, streams: Int, delivery: ServiceProcess, management: Management, tokens: [String], without: Wrk.Figures,
        idle: (rss: Double, fds: Int)
    ) async throws {
        let clock = ContinuousClock()
        let opening = clock.now
        try await fleet.open(count: streams, port: delivery.port, path: "/v1/config/updates?version=2.1.3", tokens: tokens)
        _ = try await fleet.waitForAll(streams, event: "config", since: opening, timeout: .seconds(300))
        let gauge = try await delivery.metrics()["sesame_delivery_config_streams"] ?? -1
        let open = (rss: delivery.residentMiB, fds: openFiles(of: delivery.pid))
        row("streams open (delivery's sesame_delivery_config_streams)", "\(streams) (\(Int(gauge)))")
        row("time to open them all (first config event each, 200 connecting at once)", "\(format((clock.now - opening).inSeconds)) s")
        let perStreamKiB = (open.rss - idle.rss) * 1024 / Double(streams)
        row("RSS without streams → with them",
            "\(format(idle.rss)) → \(format(open.rss)) MiB (+\(format(open.rss - idle.rss)) MiB, \(format(perStreamKiB)) KiB per stream)")
        row("file descriptors without → with", "\(idle.fds) → \(open.fds) (+\(open.fds - idle.fds))")

        // Idle for two heartbeat ticks: what open streams cost while nothing happens.
        let cpuBefore = delivery.cpuSeconds
        try await Task.sleep(for: .seconds(20))
        row("CPU while \(streams) streams idle (heartbeat every 10 s)", "\(format((delivery.cpuSeconds - cpuBefore) / 20 * 100)) % of a core")
        row("RSS after 20 s idle with them", "\(format(delivery.residentMiB)) MiB")

        let with = try hotPath(delivery, token: tokens[0])
        row("GET /v1/config, 64 connections, with \(streams) streams open",
            "\(format(with.requestsPerSecond)) req/s, p99 \(with.p99) (ratio to without \(format(with.requestsPerSecond / without.requestsPerSecond, digits: 3)))")
        guard without.non2xx == 0, with.non2xx == 0 else { throw BenchmarkFailure("non-2xx replies to GET /v1/config: \(without.non2xx), \(with.non2xx)") }

        // A change: the new ETag reaches every stream.
        let changing = clock.now
        let revision = try await management.upload(sampleConfig(round: 1))
        let acknowledged = clock.now
        var newETag = ""
        try await eventually(timeout: .seconds(30), pollEvery: .milliseconds(5), "revision \(revision) served") {
            let reply = try await HTTP.get(delivery.baseURL + configPath, headers: ["Authorization": "Bearer \(tokens[0])"])
            newETag = reply.header("etag") ?? ""
            return reply.json?["revision"] as? Int == revision
        }
        let changed = try await fleet.waitForAll(streams, event: "config", id: newETag, since: changing, timeout: .seconds(60))
        row("upload acknowledged → new ETag at every stream", percentiles(changed, from: acknowledged))

        // The kill switch: every stream is told and ended.
        let killing = clock.now
        let killed = try await management.call("kill-switch", ["versions": ["2.1.3"], "enabled": false, "reason": "benchmark"])
        guard killed["error"] == nil else { throw BenchmarkFailure("kill switch refused: \(killed)") }
        let killAcknowledged = clock.now
        let disabled = try await fleet.waitForAll(streams, event: "version_disabled", since: killing, timeout: .seconds(60))
        row("kill switch acknowledged → version_disabled at every stream", percentiles(disabled, from: killAcknowledged))
        row("(from the kill switch request sent)", percentiles(disabled, from: killing))
        try await eventually(timeout: .seconds(30), pollEvery: .milliseconds(50), "every stream ended") { fleet.endedCount >= streams }
        try await eventually(timeout: .seconds(30), pollEvery: .milliseconds(100), "delivery closed every subscription") {
            try await delivery.metrics()["sesame_delivery_config_streams"] == 0
        }
        try await fleet.close()
        try await Task.sleep(for: .seconds(2))
        row("after every stream ended: RSS, file descriptors", "\(format(delivery.residentMiB)) MiB, \(openFiles(of: delivery.pid))")
    }

    /// Prints one row of the table as soon as it is measured.
    static func row(_ label: String, _ figure: String) {
        print("| \(label) | \(figure) |")
        fflush(nil)
    }

    /// p50, p99 and max of `instants` after `start`, in milliseconds (negative: before it).
    static func percentiles(_ instants: [ContinuousClock.Instant], from start: ContinuousClock.Instant) -> String {
        let milliseconds = instants.map { ($0 - start).inSeconds * 1000 }.sorted()
        guard !milliseconds.isEmpty else { return "none" }
        let at = { (fraction: Double) in milliseconds[min(milliseconds.count - 1, Int(Double(milliseconds.count) * fraction))] }
        return "p50 \(format(at(0.5))) ms, p99 \(format(at(0.99))) ms, max \(format(milliseconds.last ?? 0)) ms"
    }

    static func openFiles(of pid: Int32) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
    }

    static func format(_ value: Double, digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }

    /// About 1 KiB of keys, endpoints and flags; `round` makes each upload differ.
    static func sampleConfig(round: Int) -> [String: Any] {
        [
            "api_keys": ["stripe": "sk_live_" + String(repeating: "a", count: 100), "maps": String(repeating: "m", count: 64)],
            "endpoints": ["api": "https://api.example.com/v2", "cdn": "https://cdn.example.com"],
            "features": ["dark_mode": true, "new_checkout": false, "max_upload_mb": 50],
            "copy": ["welcome": String(repeating: "Welcome to the app. ", count: 20)],
            "round": round,
        ]
    }
}

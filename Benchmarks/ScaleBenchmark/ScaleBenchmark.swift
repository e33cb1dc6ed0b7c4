import AdminService
import AppAttestTesting
import AuthService
import BenchmarkSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import PostgresNIO
import SesameConfiguration
import SesameEncryption
import SesameLogging
import SesameServer
import SesameStorage
import SesameTestSupport
import SwiftASN1

// How delivery's cost grows with the apps it serves and their history: for each size (100, 1,000
// and 10,000 apps by default, or the sizes given as arguments), a fresh database is seeded with
// that many apps, each with 5 patterns × 20 revisions of 4 KiB configs, a kill switch and a
// revocation; then a release `sesame-delivery` process is started and measured: its first load,
// its memory, one periodic resync, the hot path with wrk, and an upload's propagation. Admin and
// auth run in this process; the one app the requests are for is registered through them.
// With `--rollouts`, each size is measured twice: as above, then with a staged rollout in flight
// on one pattern of every app, the measured app's included, so the hot path places its install.

let operatorToken = "benchmark-operator-token-0123456789abcdef"
let benchApp = (teamID: "BENCHTEAM1", bundleID: "com.example.bench")
let logger: Logger = {
    var logger = Logger(label: "scale-benchmark")
    logger.logLevel = .warning
    return logger
}()

/// One size's figures: a row of the printed table.
struct Row {
    var apps = 0
    var rollouts = 0
    var seedSeconds = 0.0
    var firstLoadSeconds = 0.0
    var residentMiB = 0.0
    var resyncSeconds = 0.0
    var resyncCPUSeconds = 0.0
    var resyncRows = 0
    var requestsPerSecond = 0.0
    var p99 = "?"
    var propagationP99Milliseconds = 0.0

    static let header = """
        | apps | rollouts in flight | seed (s) | first load (s) | RSS after load (MiB) | resync wall (ms) | delivery CPU per resync interval (ms) | rows read per resync | GET /v1/config req/s (64 conn) | p99 | upload→served p99 (ms) |
        | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
        """

    var line: String {
        String(format: "| %d | %d | %.1f | %.2f | %.0f | %.1f | %.0f | %d | %.0f | %@ | %.0f |", apps, rollouts, seedSeconds, firstLoadSeconds, residentMiB,
            resyncSeconds * 1000, resyncCPUSeconds * 1000, resyncRows, requestsPerSecond, p99, propagationP99Milliseconds)
    }
}

@main
enum ScaleBenchmark {
    static let resyncInterval = 5

    static func main() async throws {
        SesameLogging.bootstrap(json: true, level: .warning)
        let arguments = CommandLine.arguments.dropFirst()
        let sizes = arguments.compactMap { Int($0) }
        let withRollouts = arguments.contains("--rollouts") ? [false, true] : [false]
        let delivery = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("sesame-delivery")
        guard FileManager.default.isExecutableFile(atPath: delivery.path) else {
            throw BenchmarkFailure("no release sesame-delivery beside this benchmark (\(delivery.path)): build it first")
        }
        print(Row.header)
        for size in sizes.isEmpty ? [100, 1_000, 10_000] : sizes {
            for rollouts in withRollouts {
                print(try await measure(apps: size, rollouts: rollouts, delivery: delivery).line)
            }
        }
    }

    static func measure(apps: Int, rollouts: Bool, delivery executable: URL) async throws -> Row {
        let attester = try SoftwareAttester()
        let masterKey = (0..<32).map { _ in UInt8.random(in: 0...255) }
        return try await TestDatabase.withFreshDatabase { url in
            let configuration = ServiceConfiguration(
                databaseURL: url.connectionString, kafkaBrokers: try TestKafka.brokers(), kafkaIdempotence: false,
                masterKey: MasterKeyMaterial(current: masterKey), port: 0, logLevel: .warning,
                appAttestExtraRootsPEM: try attester.rootCertificate.serializeAsPEM().pemString, operatorToken: operatorToken)
            return try await AdminService.buildApplication(configuration: configuration, logger: logger).test(.live) { admin in
                try await AuthService.buildApplication(configuration: configuration, logger: logger).test(.live) { auth in
                    for client in [admin, auth] {
                        try await eventually(timeout: .seconds(60), "ready") {
                            try await client.execute(uri: "/health/ready", method: .get) { $0.status == .ok }
                        }
                    }
                    let management = Management(admin: admin, key: try await Management(admin: admin, key: operatorToken).createKey(
                        teamID: benchApp.teamID, bundleID: benchApp.bundleID))
                    let app = SoftwareApp(attester: attester, teamID: benchApp.teamID, bundleID: benchApp.bundleID)
                    let token = try await app.attest(with: auth, appVersion: "2.1.3").accessToken
                    // Propagation is timed on `*`, which a rollout on `2.*` would hide from 2.1.3.
                    let propagationToken = try await app.attest(with: auth, appVersion: "3.1.0").accessToken
                    _ = try await management.upload(config(round: 0))
                    if rollouts {
                        // Every install is included (100 % of a rollout in flight): the hot path places it
                        // and serves the rolled-out revision, never falling through to the previous one.
                        _ = try await management.upload(config(round: -1), version: BulkSeeder.rolloutPattern)
                        _ = try await management.upload(config(round: -2), version: BulkSeeder.rolloutPattern, rollout: 1)
                        _ = try await management.call("config/rollout", ["version": BulkSeeder.rolloutPattern, "action": "widen", "percent": 100])
                    }

                    var row = Row(apps: apps, rollouts: rollouts ? apps : 0)
                    let clock = ContinuousClock()
                    let seeding = clock.now
                    try await TestDatabase.withClient(url) { client in
                        try await BulkSeeder(
                            client: client, encryption: EnvelopeEncryption(keyring: try MasterKeyring(current: masterKey)), logger: logger,
                            rollouts: rollouts
                        ).seed(0..<(apps - 1))
                        // As autovacuum would have by now: the planner knows the tables' sizes.
                        try await client.query("VACUUM ANALYZE", logger: logger)
                    }
                    row.seedSeconds = (clock.now - seeding).inSeconds

                    let delivery = try ServiceProcess(
                        executable: executable, name: "delivery", port: 26_300 + Int(getpid() % 500),
                        environment: [
                            "SESAME_DATABASE_URL": url.connectionString, "SESAME_KAFKA_BROKERS": try TestKafka.brokers().joined(separator: ","),
                            "SESAME_KAFKA_IDEMPOTENCE": "off", "SESAME_MASTER_KEY": Data(masterKey).base64EncodedString(),
                            "SESAME_LOG_LEVEL": "warning", "SESAME_DELIVERY_RESYNC_INTERVAL": "\(resyncInterval)s",
                            // wrk is one install on one address: the per-key and per-client limits would measure themselves.
                            "SESAME_REQUEST_RATE_PER_KEY": "1000000", "SESAME_REQUEST_RATE_PER_CLIENT": "1000000",
                        ],
                        log: FileManager.default.temporaryDirectory.appendingPathComponent("sesame-scale-delivery-\(apps).log"))
                    defer { delivery.stop() }
                    row.firstLoadSeconds = try await delivery.waitUntilReady(timeout: .seconds(600)).inSeconds
                    row.residentMiB = delivery.residentMiB
                    try await measureResync(of: delivery, into: &row)
                    let figures = try Wrk.run(["-t2", "-c64", "-d10s", "--latency", "-H", "Authorization: Bearer \(token)",
                        "\(delivery.baseURL)/v1/config?version=2.1.3"]).0
                    guard figures.non2xx == 0 else { throw BenchmarkFailure("delivery answered \(figures.non2xx) non-2xx replies") }
                    (row.requestsPerSecond, row.p99) = (figures.requestsPerSecond, figures.p99)
                    if rollouts { try await expectRollout(from: delivery, token: token) }
                    row.propagationP99Milliseconds = try await propagation(management: management, delivery: delivery, token: propagationToken)
                    return row
                }
            }
        }
    }

    /// Waits for a periodic resync to start a fresh interval, then takes the next one's figures:
    /// its own wall time and rows (delivery's metrics) and delivery's CPU over that interval.
    static func measureResync(of delivery: ServiceProcess, into row: inout Row) async throws {
        func resyncs() async throws -> Double { try await delivery.metrics()["sesame_delivery_resyncs_total"] ?? 0 }
        func waitForResync(after count: Double) async throws {
            try await eventually(timeout: .seconds(Int64(resyncInterval) * 10), pollEvery: .milliseconds(50), "a resync") {
                try await resyncs() > count
            }
        }
        try await waitForResync(after: try await resyncs())
        let cpu = delivery.cpuSeconds
        try await waitForResync(after: try await resyncs())
        row.resyncCPUSeconds = delivery.cpuSeconds - cpu
        let metrics = try await delivery.metrics()
        row.resyncSeconds = metrics["sesame_delivery_resync_last_seconds"] ?? 0
        row.resyncRows = Int(metrics["sesame_delivery_resync_last_rows"] ?? 0)
    }

    /// p99 over 50 uploads of the time from admin's acknowledgement to delivery serving the new revision.
    static func propagation(management: Management, delivery: ServiceProcess, token: String) async throws -> Double {
        var milliseconds: [Double] = []
        for round in 1...50 {
            let clock = ContinuousClock()
            let started = clock.now
            let revision = try await management.upload(config(round: round))
            while true {
                let reply = try await HTTP.get("\(delivery.baseURL)/v1/config?version=3.1.0", headers: ["Authorization": "Bearer \(token)"])
                if reply.json?["revision"] as? Int == revision { break }
                guard clock.now - started < .seconds(30) else { throw BenchmarkFailure("revision \(revision) not served after 30 s") }
                try await Task.sleep(for: .milliseconds(2))
            }
            milliseconds.append((clock.now - started).inSeconds * 1000)
        }
        return milliseconds.sorted()[Int(Double(milliseconds.count) * 0.99) - 1]
    }

    /// Fails unless the measured install was served through the rollout (so wrk measured placement).
    static func expectRollout(from delivery: ServiceProcess, token: String) async throws {
        let reply = try await HTTP.get("\(delivery.baseURL)/v1/config?version=2.1.3", headers: ["Authorization": "Bearer \(token)"])
        guard let rollout = reply.json?["rollout"] as? [String: Any], rollout["included"] as? Bool == true else {
            throw BenchmarkFailure("the measured install was not served through the rollout: \(reply.json ?? [:])")
        }
    }

    static func config(round: Int) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(BulkSeeder.config(appID: "\(benchApp.teamID).\(benchApp.bundleID)", pattern: "\(round)")))) as? [String: Any] ?? [:]
    }
}

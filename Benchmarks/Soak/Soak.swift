import ArgumentParser
import BenchmarkSupport
import DevSuite
import Foundation
import SesameKit
import SesameKitTesting

/// `./sesame-dev soak`: launch day on this machine. Two auth and three delivery replicas behind the
/// gateway; a fleet of SesameKit software devices attests (paced by the shared admission budget),
/// fetches, refreshes and revalidates with ETags while an admin publishes every 10 s; midway one
/// delivery replica is killed (-9) and restarted, PostgreSQL stops for 20 s, then the broker does.
/// Every config a device receives is checked against what was published, and every process's
/// memory is sampled and judged by its trend; the run fails on any violation. It scales the
/// fleet's rate to the machine, never the checks; `--duration 3600` is the long day.
@main
struct Soak: AsyncParsableCommand {
    @Option(help: "A folder for this run's files.") var work: String
    @Option(help: "How long the fleet runs, in seconds.") var duration = 300
    @Option(help: "Devices (distinct App Attest keys).") var devices = 2000
    @Option(help: "Seconds between one device's fetches.") var fetchInterval = 12.0

    /// How long after a fault ends 5xx answers and failed requests are still the fault's.
    static let recoveryGrace = 15.0
    /// How stale a config may be: the resync interval the suite runs with, and a margin.
    static let stalenessBound = 20.0
    /// Seconds between two samples of every process's memory.
    static let memoryInterval = 15.0

    func run() async throws {
        let workURL = URL(fileURLWithPath: work, isDirectory: true)
        try FileManager.default.createDirectory(at: workURL, withIntermediateDirectories: true)
        let authority = SoftwareAttestationAuthority()
        let root = workURL.appendingPathComponent("soak-root.pem")
        try authority.rootCertificatePEM.write(to: root, atomically: true, encoding: .utf8)
        let operatorToken = Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        // The suite `./sesame-dev soak` laid out (its SESAME_DEV_* environment), driven directly.
        let suite = DevelopmentSuite(layout: try SuiteLayout.fromEnvironment(), extraEnvironment: [
            "SESAME_APP_ATTEST_EXTRA_ROOTS": root.path, "SESAME_OPERATOR_TOKEN": operatorToken,
            // The whole fleet reaches the gateway from one address: per-address limits would measure themselves.
            "SESAME_ATTEST_RATE_PER_CLIENT": "100000", "SESAME_REQUEST_RATE_PER_CLIENT": "100000",
            // Apple's ramp, scaled to two cores; tokens short enough that every device refreshes
            // (SesameKit refreshes once less than a minute is left).
            "SESAME_ATTEST_ADMISSION_RATE": "25", "SESAME_ACCESS_TOKEN_TTL": "2m", "SESAME_DELIVERY_RESYNC_INTERVAL": "10s",
            "SESAME_LOG_LEVEL": "warning",
        ])
        let replicas = Replicas(auth: 2, delivery: 3)
        try await suite.up(replicas)
        let recorder = Recorder()
        var failure: (any Error)?
        do {
            try await soak(suite: suite, replicas: replicas, operatorToken: operatorToken, authority: authority, recorder: recorder)
        } catch {
            failure = error
        }
        try? await suite.down()
        if let failure { throw failure }
    }

    func soak(suite: DevelopmentSuite, replicas: Replicas, operatorToken: String, authority: SoftwareAttestationAuthority, recorder: Recorder) async throws {
        let gateway = "http://127.0.0.1:\(suite.layout.gatewayPort)"
        let apps = [("SOAKTEAM01", "com.example.launch"), ("SOAKTEAM01", "com.example.other")]
        var keys: [String: String] = [:]
        for (team, bundle) in apps {
            let reply = try await HTTP.post("\(gateway)/v1/admin/keys/create", json: ["teamId": team, "bundleId": bundle],
                headers: ["Authorization": "Bearer \(operatorToken)"])
            guard let key = reply.json?["key"] as? String else { throw BenchmarkFailure("keys/create: \(reply.status) \(reply.bodyText)") }
            keys["\(team).\(bundle)"] = key
        }
        let publisher = Publisher(gateway: gateway, keys: keys, recorder: recorder)
        for appID in keys.keys.sorted() { try await publisher.publish(appID, round: 0) }

        let faults = FaultPlan(duration: Double(duration))
        let memory = MemoryWatch(pids: URL(fileURLWithPath: suite.layout.pids, isDirectory: true))
        progress("soak: \(devices) devices for \(duration) s, a fetch every \(fetchInterval) s each; faults: \(faults.summary)")
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await publisher.run(until: Double(duration), every: 10) }
            for index in 0..<devices {
                let (team, bundle) = apps[index % apps.count]
                let device = FleetDevice(
                    index: index, gateway: gateway, teamID: team, bundleID: bundle, authority: authority, recorder: recorder,
                    fetchInterval: fetchInterval, staleness: Self.stalenessBound)
                // New installs arrive over the first fifth of the run, as a launch's do.
                let arrival = Double(index) / Double(devices) * Double(duration) / 5
                group.addTask { try await device.run(arrivingAt: arrival, until: Double(duration)) }
            }
            group.addTask { try await faults.run(suite: suite, replicas: replicas, memory: memory, recorder: recorder) }
            group.addTask { try await memory.run(every: Self.memoryInterval, until: Double(duration), recorder) }
            try await group.waitForAll()
        }
        let drained = try await OutboxCheck(databaseURL: suite.layout.databaseURL).waitUntilDrained(timeout: .seconds(60))
        if !drained { recorder.violation("the outbox still holds unpublished events 60 s after the run") }
        memory.sample(at: recorder.now)
        let samples = URL(fileURLWithPath: work).appendingPathComponent("memory.csv")
        try memory.csv.write(to: samples, atomically: true, encoding: .utf8)
        progress("soak: every memory sample is in \(samples.path)")
        let report = Report(recorder: recorder, faults: faults, memory: memory, recoveryGrace: Self.recoveryGrace)
        print(report.text)
        let violations = recorder.violations + report.violations
        if !violations.isEmpty {
            print("soak: FAILED with \(violations.count) violations:")
            for violation in violations.prefix(30) { print("  - \(violation)") }
            throw ExitCode.failure
        }
        print("soak: no violations")
    }
}

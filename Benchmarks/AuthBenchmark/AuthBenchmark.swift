import AppAttestTesting
import BenchmarkSupport
import Foundation
import Logging
import PostgresNIO
import SesameEncryption
import SesameStorage
import SesameTestSupport
import SesameTokens
import SwiftASN1

// Measures sesame-auth as its own release process over HTTP with wrk on this machine, against the
// PostgreSQL and broker that `./sesame-dev bench auth` started, and a baseline build of auth beside
// it in the same run (`SESAME_BENCH_AUTH_BASELINE`, which `./sesame-dev bench auth` builds from an
// earlier commit), so that machine noise cancels in the ratio. Every request is a distinct, valid
// one (a challenge or a refresh token is single use), so the figures are for successful work, and a
// non-200 reply is reported. The crypto floor (this machine's P-256 rates, measured in the same run)
// says how far each flow is from doing nothing but its signatures.
//
// The per-app admission limit is lifted (`SESAME_ATTEST_ADMISSION_RATE`), otherwise it is what is
// measured; clients come from distinct addresses behind a trusted gateway, as through nginx.
// `SESAME_BENCH_AUTH`: another executable to start instead of this tree's (a script running it under perf).

let logger: Logger = {
    var logger = Logger(label: "auth-benchmark")
    logger.logLevel = .warning
    return logger
}()

/// One auth executable under test.
struct AuthBuild {
    let label: String
    let executable: URL
    /// Added to the service's environment.
    var environment: [String: String] = [:]
}

@main
enum AuthBenchmark {
    static func main() async throws {
        let environment = ProcessInfo.processInfo.environment
        let current = environment["SESAME_BENCH_AUTH"].map { URL(fileURLWithPath: $0) }
            ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("sesame-auth")
        var builds: [AuthBuild] = []
        if let baseline = environment["SESAME_BENCH_AUTH_BASELINE"], !baseline.isEmpty {
            builds.append(AuthBuild(label: environment["SESAME_BENCH_BASELINE_LABEL"] ?? "baseline", executable: URL(fileURLWithPath: baseline)))
        }
        builds.append(AuthBuild(label: "this tree", executable: current))
        // `SESAME_BENCH_DISPATCH_EXECUTOR=also`: this tree again, its tasks on Dispatch's global queue
        // (`SESAME_EXECUTOR=dispatch`) instead of NIO's event loops.
        if environment["SESAME_BENCH_DISPATCH_EXECUTOR"] == "also" {
            builds.append(AuthBuild(label: "this tree, Dispatch executor", executable: current, environment: ["SESAME_EXECUTOR": "dispatch"]))
        }
        for build in builds where !FileManager.default.isExecutableFile(atPath: build.executable.path) {
            throw BenchmarkFailure("no auth executable for \(build.label) at \(build.executable.path): build it first")
        }
        let attestCount = Int(environment["SESAME_BENCH_ATTESTATIONS"] ?? "") ?? 20_000
        // `SESAME_BENCH_TRACING=also`: this tree again exporting its traces (OTLP/HTTP, to a sink
        // in this process), a 1 % sample and every request.
        if environment["SESAME_BENCH_TRACING"] == "also" {
            let sink = TraceSink()
            let untraced = builds
            try await sink.run { url in
                let traced = untraced + [("1 %", "0.01"), ("100 %", "1")].map { label, ratio in
                    AuthBuild(
                        label: "this tree, traced \(label)", executable: current,
                        environment: [
                            "OTEL_EXPORTER_OTLP_ENDPOINT": url.absoluteString, "OTEL_TRACES_SAMPLER": "traceidratio",
                            "OTEL_TRACES_SAMPLER_ARG": ratio,
                        ])
                }
                try await report(traced, attestCount: attestCount)
            }
            print("trace sink: \(sink.summary)")
            return
        }
        try await report(builds, attestCount: attestCount)
    }

    /// Measures each build in turn and prints their figures and the table.
    static func report(_ builds: [AuthBuild], attestCount: Int) async throws {
        let floor = CryptoFloor.measure()
        print(String(format: "crypto floor, one core: P-256 sign %.0f/s, verify %.0f/s", floor.signsPerSecond, floor.verifiesPerSecond))
        var results: [(build: AuthBuild, flows: [FlowFigures])] = []
        for build in builds {
            print("measuring \(build.label) (\(build.executable.path))")
            let flows = try await measure(build, attestCount: attestCount)
            for figures in flows { print("  " + line(figures)) }
            results.append((build, flows))
        }
        print()
        print(table(results, floor: floor))
    }

    /// The five flows against `build`, started on a fresh database.
    nonisolated static func measure(_ build: AuthBuild, attestCount: Int) async throws -> [FlowFigures] {
        let attester = try SoftwareAttester()
        let masterKey = (0..<32).map { _ in UInt8.random(in: 0...255) }
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("sesame-auth-benchmark-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let roots = work.appendingPathComponent("roots.pem")
        try attester.rootCertificate.serializeAsPEM().pemString.write(to: roots, atomically: true, encoding: .utf8)
        return try await TestDatabase.withFreshDatabase { url in
            let auth = try ServiceProcess(
                executable: build.executable, name: "auth (\(build.label))", port: 26_700 + Int(getpid() % 500),
                environment: [
                    "SESAME_DATABASE_URL": url.connectionString, "SESAME_KAFKA_BROKERS": try TestKafka.brokers().joined(separator: ","),
                    "SESAME_KAFKA_IDEMPOTENCE": "off", "SESAME_MASTER_KEY": Data(masterKey).base64EncodedString(),
                    "SESAME_LOG_LEVEL": "warning", "SESAME_APP_ATTEST_EXTRA_ROOTS": roots.path,
                    "SESAME_TRUSTED_PROXIES": "127.0.0.1", "SESAME_ATTEST_ADMISSION_RATE": "1000000",
                ].merging(build.environment) { _, variant in variant },
                log: work.deletingLastPathComponent().appendingPathComponent("sesame-auth-benchmark-\(build.label.filter(\.isLetter)).log"))
            defer { auth.stop() }
            try await auth.waitUntilReady(timeout: .seconds(120))
            let minting = Database(url: url, logger: logger)
            return try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await minting.run() }
                defer { group.cancelAll() }
                let tokens = TokenAuthority(
                    store: SigningKeyStore(
                        database: minting, encryption: EnvelopeEncryption(keyring: try MasterKeyring(current: masterKey)), logger: logger),
                    signs: true, logger: logger)
                return try await TestDatabase.withClient(url) { database in
                    try await AuthWorkload(
                        auth: auth, database: database, tokens: tokens, attester: attester, work: work, attestCount: attestCount, logger: logger
                    ).run()
                }
            }
        }
    }

    static func line(_ figures: FlowFigures) -> String {
        String(
            format: "auth %@: %.0f req/s, p50 %@, p99 %@ (%d OK%@); CPU per request: auth %.2f ms, PostgreSQL %.2f ms", figures.flow.rawValue,
            figures.requestsPerSecond, figures.p50, figures.p99, figures.ok, figures.others.isEmpty ? "" : "; other replies: \(figures.others)",
            figures.authCPU, figures.databaseCPU)
    }

    /// A Markdown table: each build's figures per flow, each later build's ratio to the first, and
    /// each flow against the crypto floor (its signatures' CPU as a share of auth's CPU per request).
    static func table(_ results: [(build: AuthBuild, flows: [FlowFigures])], floor: CryptoFloor) -> String {
        var header = "| flow | crypto floor (req/s per core) |"
        var rule = "| --- | ---: |"
        for (build, _) in results {
            header += " \(build.label): req/s | p99 | auth CPU/req | PostgreSQL CPU/req | crypto share of auth CPU |"
            rule += " ---: | ---: | ---: | ---: | ---: |"
        }
        for (build, _) in results.dropFirst() {
            header += " \(build.label) ÷ \(results[0].build.label) |"
            rule += " ---: |"
        }
        var rows = [header, rule]
        for flow in Flow.allCases {
            let perCore = floor.requestsPerSecondPerCore(signs: flow.crypto.signs, verifies: flow.crypto.verifies)
            var row = String(format: "| %@ | %.0f |", flow.rawValue, perCore)
            for (_, flows) in results {
                guard let figures = flows.first(where: { $0.flow == flow }) else { row += " – | – | – | – | – |"; continue }
                row += String(
                    format: " %.0f | %@ | %.2f ms | %.2f ms | %.0f %% |", figures.requestsPerSecond, figures.p99, figures.authCPU, figures.databaseCPU,
                    100 * (1000 / perCore) / max(figures.authCPU, 0.001))
            }
            let first = results.first?.flows.first(where: { $0.flow == flow })
            for (_, flows) in results.dropFirst() {
                guard let first, let figures = flows.first(where: { $0.flow == flow }) else { row += " – |"; continue }
                row += String(format: " %.2f× |", figures.requestsPerSecond / max(first.requestsPerSecond, 1))
            }
            rows.append(row)
        }
        return rows.joined(separator: "\n")
    }
}

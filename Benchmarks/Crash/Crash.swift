import AppAttestTesting
import ArgumentParser
import BenchmarkSupport
import DevSuite
import Foundation
import SwiftASN1
import X509

/// `./sesame-dev crash`: kills services with SIGKILL in the middle of their writes, round after
/// round, and checks after each restart what must hold (`AdminCrash`, `AuthCrash`). Prints what
/// it tried and what held.
@main
struct Crash: AsyncParsableCommand {
    @Option(help: "A folder for this run's files.") var work: String
    @Option(help: "Rounds per service: each starts writes, kills the service at a random moment, restarts it and checks.") var rounds = 100
    @Option(help: "The services to kill, comma-separated: admin, auth.") var services = "admin,auth"

    func validate() throws {
        guard !chosen.isEmpty, chosen.allSatisfy({ ["admin", "auth"].contains($0) }) else {
            throw ValidationError("--services takes admin, auth or both, comma-separated")
        }
        guard rounds > 0 else { throw ValidationError("--rounds must be at least 1") }
    }

    private var chosen: [String] { services.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }

    func run() async throws {
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        let operatorToken = Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        // Auth's installs attest with a software attester, whose root the suite trusts (development only).
        let attester = try SoftwareAttester()
        let root = URL(fileURLWithPath: work).appendingPathComponent("software-attester-root.pem")
        try attester.rootCertificate.serializeAsPEM().pemString.write(to: root, atomically: true, encoding: .utf8)
        let suite = DevelopmentSuite(layout: try SuiteLayout.fromEnvironment(), extraEnvironment: [
            "SESAME_OPERATOR_TOKEN": operatorToken, "SESAME_LOG_LEVEL": "warning", "SESAME_DELIVERY_RESYNC_INTERVAL": "5s",
            "SESAME_REQUEST_RATE_PER_CLIENT": "100000", "SESAME_REQUEST_RATE_PER_KEY": "100000",
            "SESAME_APP_ATTEST_EXTRA_ROOTS": root.path, "SESAME_ATTEST_RATE_PER_CLIENT": "100000", "SESAME_ATTEST_ADMISSION_RATE": "100000",
        ])
        try await suite.up()
        let gateway = "http://127.0.0.1:\(suite.layout.gatewayPort)"
        var failure: (any Error)?
        var summary: [String] = []
        do {
            for service in chosen {
                switch service {
                case "admin": summary += try await AdminCrash(suite: suite, gateway: gateway, operatorToken: operatorToken, rounds: rounds).run()
                default:
                    summary += try await AuthCrash(suite: suite, gateway: gateway, operatorToken: operatorToken, attester: attester, rounds: rounds).run()
                }
            }
        } catch {
            failure = error
        }
        try? await suite.down()
        for line in summary { CrashSupport.say("crash: \(line)") }
        if let failure { throw failure }
    }
}

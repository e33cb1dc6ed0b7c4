import AppAttestTesting
import ArgumentParser
import Foundation
import SesameKitTesting
import SesameVault
import SwiftASN1
import X509

/// `sesame-e2e`: one user's day through the local suite's gateway, a line per step with its time.
/// Starts the suite itself (`./sesame-dev up --delivery-replicas 2`, trusting this run's software
/// App Attest root) and stops it at the end. Exit 0 only if every step held.
@main
struct EndToEnd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "sesame-e2e", abstract: "Walk the whole product through the gateway.")

    @Option(help: "The local runner.") var runner: String
    @Option(help: "The sesame CLI executable.") var cli: String
    @Option(help: "The sesame-device executable.") var device: String
    @Option(help: "The gateway's URL, as the runner is configured.") var gateway: String
    @Option(help: "Each delivery replica's own URL, as the runner is configured.") var delivery: [String]
    @Option(help: "A folder for this run's files.") var work: String
    @Option(help: "The runner's state folder for this suite.") var state: String
    @Option(help: "The folder of this suite's PostgreSQL cluster.") var database: String

    func run() async throws {
        guard let gatewayURL = URL(string: gateway) else { throw ValidationError("--gateway is not a URL") }
        let attester = try SoftwareAttester()
        let kitAuthority = SoftwareAttestationAuthority()
        let workURL = URL(fileURLWithPath: work, isDirectory: true)
        try FileManager.default.createDirectory(at: workURL, withIntermediateDirectories: true)
        let root = workURL.appendingPathComponent("software-attester-root.pem")
        try (attester.rootCertificate.serializeAsPEM().pemString + "\n" + kitAuthority.rootCertificatePEM)
            .write(to: root, atomically: true, encoding: .utf8)
        // sesame-device attests under the same authority as the walk's SesameKit installs.
        let deviceAuthority = workURL.appendingPathComponent("device-authority.pem")
        try kitAuthority.pemBundle.write(to: deviceAuthority, atomically: true, encoding: .utf8)
        let operatorToken = Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        let suite = LocalSuite(
            runner: runner, cli: cli, device: device, gateway: gatewayURL,
            environment: ["SESAME_APP_ATTEST_EXTRA_ROOTS": root.path, "SESAME_OPERATOR_TOKEN": operatorToken])

        let replicaClients = try delivery.map { guard let url = URL(string: $0) else { throw ValidationError("bad --delivery \($0)") }; return HTTPClient(base: url) }
        try await suite.runSuite(["up", "--delivery-replicas", "\(delivery.count)"])
        let walk = Walk(
            suite: suite, device: Device(attester: attester, team: "TEAMID1234", bundle: "com.example.app", gateway: HTTPClient(base: gatewayURL)),
            replicas: replicaClients, work: workURL, kitAuthority: kitAuthority, deviceAuthority: deviceAuthority.path,
            operations: OperationsWalk(
                suite: suite, gateway: HTTPClient(base: gatewayURL), replicas: replicaClients,
                state: URL(fileURLWithPath: state, isDirectory: true), database: URL(fileURLWithPath: database, isDirectory: true)))
        var failure: (any Error)?
        do { try await walk.run() } catch { failure = error }
        try? await suite.runSuite(["down"])
        if let failure {
            print("e2e: FAILED: \(failure)")
            throw ExitCode.failure
        }
        print("e2e: every step passed")
    }
}

import AppAttestTesting
import AppleFake
import Crypto
import ArgumentParser
import DevSuite
import Foundation
import SesameKitTesting
import SesameVault
import SwiftASN1
import X509

/// `sesame-e2e`: one user's day through the local suite's gateway, a line per step with its time.
/// Starts the suite `./sesame-dev e2e` laid out (its `SESAME_DEV_*` environment) itself, with two
/// delivery replicas, trusting this run's software App Attest root, and stops it at the end. Exit 0
/// only if every step held.
@main
struct EndToEnd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "sesame-e2e", abstract: "Walk the whole product through the gateway.")

    @Option(help: "The sesame CLI executable.") var cli: String
    @Option(help: "The sesame-device executable.") var device: String
    @Option(help: "The README's quick start, built by URL in Tests/AppByURL (its QuickStart executable).") var quickStart: String
    @Option(help: "A folder for this run's files.") var work: String

    /// Delivery replicas the walk runs, each checked on its own.
    static let deliveryReplicas = 2

    func run() async throws {
        let layout = try SuiteLayout.fromEnvironment()
        let gatewayURL = URL(string: "http://127.0.0.1:\(layout.gatewayPort)")!
        // Apple's receipt signer, stood in for: the attester's receipts and the fake Apple's are its.
        let receipts = SoftwareReceiptAuthority()
        let attester = try SoftwareAttester(receipts: receipts)
        let kitAuthority = SoftwareAttestationAuthority()
        let workURL = URL(fileURLWithPath: work, isDirectory: true)
        try FileManager.default.createDirectory(at: workURL, withIntermediateDirectories: true)
        let root = workURL.appendingPathComponent("software-attester-root.pem")
        try (attester.rootCertificate.serializeAsPEM().pemString + "\n" + kitAuthority.rootCertificatePEM + "\n" + receipts.rootCertificatePEM)
            .write(to: root, atomically: true, encoding: .utf8)
        // sesame-device attests under the same authority as the walk's SesameKit installs.
        let deviceAuthority = workURL.appendingPathComponent("device-authority.pem")
        try kitAuthority.pemBundle.write(to: deviceAuthority, atomically: true, encoding: .utf8)
        let operatorToken = Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        // Apple's DeviceCheck server, faked in this process, knows the team's DeviceCheck key.
        let appleKey = P256.Signing.PrivateKey()
        let apple = WalkApple(
            server: FakeDeviceCheck(receipts: receipts), keyID: "WALKKEY123", keyFile: workURL.appendingPathComponent("devicecheck.p8").path,
            attester: attester)
        try appleKey.pemRepresentation.write(toFile: apple.keyFile, atomically: true, encoding: .utf8)
        apple.server.register(keyID: apple.keyID, teamID: "TEAMID1234", publicKey: appleKey.publicKey)
        let traces = TraceCollector()
        do {
            try await traces.run { traceURL in
                try await apple.server.run { appleURL in
                    let suite = LocalSuite(
                        suite: DevelopmentSuite(
                            layout: layout,
                            extraEnvironment: [
                                "SESAME_APP_ATTEST_EXTRA_ROOTS": root.path, "SESAME_OPERATOR_TOKEN": operatorToken,
                                "SESAME_APPLE_DEVICECHECK_URL": appleURL, "SESAME_APPLE_DEVICECHECK_DEVELOPMENT_URL": appleURL,
                                "SESAME_APPLE_APP_ATTEST_DATA_URL": appleURL, "SESAME_APPLE_APP_ATTEST_DATA_DEVELOPMENT_URL": appleURL,
                                "SESAME_OUTBOUND_ALLOWED_HOSTS": "*=127.0.0.1:*@*", "SESAME_RECEIPT_REDEMPTION_INTERVAL": "1s",
                            ].merging(TraceCollector.environment(traceURL)) { $1 }),
                        cli: cli, device: device, quickStart: quickStart, gateway: gatewayURL)

                    let replicas = Replicas(delivery: Self.deliveryReplicas)
                    // Where the suite puts each delivery replica: the first on its port, the others ten apart.
                    let replicaClients = (0..<replicas.delivery).map { HTTPClient(base: URL(string: "http://127.0.0.1:\(layout.deliveryPort + 10 * $0)")!) }
                    try await suite.suite.up(replicas)
                    let walk = Walk(
                        suite: suite, device: Device(attester: attester, team: "TEAMID1234", bundle: "com.example.app", gateway: HTTPClient(base: gatewayURL)),
                        replicas: replicaClients, work: workURL, kitAuthority: kitAuthority, deviceAuthority: deviceAuthority.path,
                        operations: OperationsWalk(suite: suite, gateway: HTTPClient(base: gatewayURL), replicas: replicaClients, replicaCounts: replicas),
                        apple: apple, traces: traces)
                    var failure: (any Error)?
                    do { try await walk.run() } catch { failure = error }
                    try? await suite.suite.down()
                    if let failure { throw failure }
                }
            }
        } catch {
            print("e2e: FAILED: \(error)")
            throw ExitCode.failure
        }
        print("e2e: every step passed")
    }
}

/// The walk's fake Apple: the server, and the team's DeviceCheck key as `sesame apple set` reads it.
struct WalkApple: Sendable {
    let server: FakeDeviceCheck
    let keyID: String
    let keyFile: String
    /// The attester whose receipts the fake Apple trades.
    let attester: SoftwareAttester
}

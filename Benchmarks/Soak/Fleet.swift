import BenchmarkSupport
import Foundation
import SesameKit
import SesameKitTesting

/// The admin side: publishes a new config to every app every few seconds and records what each
/// acknowledged revision holds. A publish refused during an outage is retried at the next tick.
struct Publisher: Sendable {
    let gateway: String
    /// Provisioning key per app.
    let keys: [String: String]
    let recorder: Recorder

    func publish(_ appID: String, round: Int) async throws {
        guard let key = keys[appID] else { return }
        let reply = try await HTTP.post(
            "\(gateway)/v1/admin/config/upload", json: ["version": "*", "config": ["app": appID, "round": round]],
            headers: ["Authorization": "Bearer \(key)"])
        guard reply.status == 200, let revision = reply.json?["revision"] as? Int else {
            throw BenchmarkFailure("upload refused: \(reply.status)")
        }
        recorder.record(.init(appID: appID, revision: Int64(revision), round: round, acknowledgedAt: recorder.now))
    }

    func run(until end: Double, every interval: Double) async throws {
        var round = 1
        while recorder.now < end {
            try await Task.sleep(for: .seconds(interval))
            for appID in keys.keys.sorted() { try? await publish(appID, round: round) }
            round += 1
        }
    }
}

/// One install: arrives, attests (through SesameKit, paced by Sesame's admission answers), then
/// fetches on its interval; each config Sesame answered with is checked.
struct FleetDevice: Sendable {
    let index: Int
    let gateway: String
    let teamID: String
    let bundleID: String
    let authority: SoftwareAttestationAuthority
    let recorder: Recorder
    let fetchInterval: Double
    /// How far behind the newest acknowledged revision a served config may be, in seconds.
    let staleness: Double

    var appID: String { "\(teamID).\(bundleID)" }

    func run(arrivingAt arrival: Double, until end: Double) async throws {
        try await Task.sleep(for: .seconds(arrival))
        let client = SesameClient(
            configuration: SesameClient.Configuration(baseURL: URL(string: gateway)!, teamID: teamID, bundleID: bundleID, appVersion: "1.0.0"),
            attestation: SoftwareAppAttest(appID: appID, authority: authority), store: InMemorySecureStore(),
            transport: MeasuringTransport(recorder: recorder))
        // Spread the fleet's fetches evenly over the interval.
        var next = recorder.now
        while recorder.now < end {
            let askedAt = recorder.now
            do {
                check(try await client.fetchConfig(), askedAt: askedAt)
                next += fetchInterval
            } catch .rateLimited(let wait) {
                next = recorder.now + wait.seconds
            } catch .versionDisabled(let reason) {
                recorder.violation("device \(index) told its version is disabled: \(reason)")
                return
            } catch {
                // Outages: the report decides whether they fell in a fault window.
                next = recorder.now + min(fetchInterval, 5)
            }
            let pause = next - recorder.now
            if pause > 0 { try await Task.sleep(for: .seconds(pause)) }
        }
    }

    /// What Sesame answered must be a revision published for this app, holding what was published,
    /// and not older than the newest one acknowledged `staleness` seconds before it was asked.
    private func check(_ config: SesameConfig, askedAt: Double) {
        guard config.source == .network else { return }
        recorder.checkedConfig()
        guard config.string("app") == appID else {
            recorder.violation("device \(index) of \(appID) received \(config.string("app") ?? "a config of no app")")
            return
        }
        let served = Recorder.Served(device: index, appID: appID, revision: config.revision, round: config.int("round"))
        guard let published = recorder.publication(appID, revision: config.revision) else {
            // Perhaps served before the upload's answer reached the publisher: judged at the end.
            recorder.unconfirmed(served)
            return
        }
        if let problem = Recorder.violation(of: served, published: published) { recorder.violation(problem) }
        if let newest = recorder.newestRevision(of: appID, acknowledgedBy: askedAt - staleness), config.revision < newest {
            recorder.violation(
                String(format: "device %d at %.0f s got revision %lld of %@; %lld was acknowledged over %.0f s earlier", index, askedAt,
                    config.revision, appID, newest, staleness))
        }
    }
}

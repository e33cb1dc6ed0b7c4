import DeliveryService
import Foundation
import HTTPTypes
import HummingbirdTesting
import PostgresNIO
import SesameServer
import SesameTestSupport
import SesameHTTP
import Testing

@Suite("One app that cannot be loaded does not take delivery down for the others")
struct AppIsolationTests {
    static let brokenBundle = "com.example.broken"
    static let brokenApp = "\(DeliveryHarness.teamID).\(brokenBundle)"

    @Test(
        "a config that cannot be opened: a new instance serves the other apps, answers 503 app_unavailable for the broken one and names it in readiness; a running instance keeps what it held; a fix loads again"
    )
    func brokenAppIsIsolated() async throws {
        try await DeliveryHarness.run(resyncInterval: .seconds(1)) { harness in
            let (brokenKey, brokenApp) = try await harness.createApp(bundleID: Self.brokenBundle)
            let healthyRevision = try await harness.upload(["app": "healthy"], version: "*")
            let brokenRevision = try #require(
                try await harness.manage(.post, "config/upload", ["version": "*", "config": ["app": "broken"]], key: brokenKey)["revision"] as? Int)
            let healthyToken = try await harness.app.attest(with: harness.auth, appVersion: "1.0.0").accessToken
            let brokenToken = try await brokenApp.attest(with: harness.auth, appVersion: "1.0.0").accessToken
            try await harness.waitUntilServed(version: "1.0.0", revision: healthyRevision, token: healthyToken)
            try await harness.waitUntilServed(version: "1.0.0", revision: brokenRevision, token: brokenToken)

            // As if sealed under a master key this deployment does not have.
            try await harness.database.query(
                "UPDATE config_revisions SET body = \(Data(repeating: 7, count: 64)) WHERE app_id = \(Self.brokenApp)")

            try await DeliveryService.buildApplication(configuration: harness.configuration).test(.live) { fresh in
                try await eventually("the new instance loads") { try await harness.readinessBody(of: fresh)["status"] as? String == "degraded" }
                let readiness = try await harness.readinessBody(of: fresh)
                #expect((readiness["checks"] as? [String: String])?["apps"] == "down")
                #expect((readiness["details"] as? [String: String])?["apps"] == "cannot load: \(Self.brokenApp)")
                // Through the gateway (which always sets X-Forwarded-For) the failing app is counted, not named.
                let throughGateway = try await fresh.execute(uri: "/health/ready", method: .get, headers: [.xForwardedFor: "203.0.113.9"]) {
                    String(buffer: $0.body)
                }
                #expect(throughGateway.contains("1 app(s) cannot be loaded") && !throughGateway.contains(Self.brokenApp), "\(throughGateway)")

                let healthy = try await fresh.execute(uri: "/v1/config?version=1.0.0", method: .get, headers: [.authorization: "Bearer \(healthyToken)"]) {
                    ($0.status, String(buffer: $0.body))
                }
                #expect(healthy.0 == .ok && healthy.1.contains("healthy"), "\(healthy.1)")
                let broken = try await fresh.execute(uri: "/v1/config?version=1.0.0", method: .get, headers: [.authorization: "Bearer \(brokenToken)"]) {
                    ($0.status, $0.headers[.retryAfter], String(buffer: $0.body))
                }
                #expect(broken.0 == .serviceUnavailable && broken.1 != nil && broken.2.contains("app_unavailable"), "\(broken.2)")
                // Never served as an app with nothing switched off: every endpoint behind the gate refuses.
                let link = try await fresh.execute(uri: "/v1/blob/anything", method: .get, headers: [.authorization: "Bearer \(brokenToken)"]) { $0.status }
                #expect(link == .serviceUnavailable)

                // The running instances held the revision before it broke: they keep serving it.
                #expect(try await harness.fetch(version: "1.0.0", token: brokenToken).config?["app"] as? String == "broken")

                // A running instance that cannot reload an app keeps what it held and says so.
                try await harness.database.query("UPDATE apps SET policy = '{\"userIdentity\": \"bogus\"}'::jsonb WHERE app_id = \(Self.brokenApp)")
                try await eventually("instance 0 reports the app") { try await harness.readiness(instance: 0) == "degraded" }
                #expect(try await harness.fetch(version: "1.0.0", token: brokenToken).config?["app"] as? String == "broken")
                #expect(try await harness.fetch(version: "1.0.0", token: healthyToken).config?["app"] as? String == "healthy")

                // Fixed: a policy that reads and a new revision load everywhere.
                try await harness.database.query("UPDATE apps SET policy = '{}'::jsonb WHERE app_id = \(Self.brokenApp)")
                let fixed = try #require(
                    try await harness.manage(.post, "config/upload", ["version": "*", "config": ["app": "fixed"]], key: brokenKey)["revision"] as? Int)
                try await harness.waitUntilServed(version: "1.0.0", revision: fixed, token: brokenToken)
                try await eventually("the new instance serves the fixed app") {
                    try await fresh.execute(uri: "/v1/config?version=1.0.0", method: .get, headers: [.authorization: "Bearer \(brokenToken)"]) {
                        $0.status == .ok && String(buffer: $0.body).contains("fixed")
                    }
                }
                try await eventually("every instance is ready again") {
                    let states = [try await harness.readinessBody(of: fresh)["status"] as? String, try await harness.readiness(instance: 0)]
                    return states == ["ready", "ready"]
                }
            }
        }
    }
}

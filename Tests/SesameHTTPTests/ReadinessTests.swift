import Foundation
import Hummingbird
import HummingbirdTesting
import NIOFoundationEssentialsCompat
import SesameHTTP
import Testing

@Suite("Readiness")
struct ReadinessTests {
    @Test(
        "all up is ready; only degrading checks down is degraded and still 200; a required check down is 503",
        arguments: [
            (required: true, degrading: true, status: HTTPResponse.Status.ok, body: "ready"),
            (required: true, degrading: false, status: .ok, body: "degraded"),
            (required: false, degrading: true, status: .serviceUnavailable, body: "unavailable"),
            (required: false, degrading: false, status: .serviceUnavailable, body: "unavailable"),
        ])
    func statuses(required: Bool, degrading: Bool, status: HTTPResponse.Status, body: String) async throws {
        let checks = [ReadinessCheck(name: "cache") { required }, ReadinessCheck(name: "kafka", impact: .degrading) { degrading }]
        let router = Router()
        HealthRoutes(checks: checks).register(on: router)
        try await Application(router: router).test(.router) { client in
            try await client.execute(uri: "/health/ready", method: .get) { response in
                #expect(response.status == status)
                let json = try #require(try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any])
                #expect(json["status"] as? String == body)
                #expect(json["checks"] as? [String: String] == ["cache": required ? "up" : "down", "kafka": degrading ? "up" : "down"])
            }
        }
    }
}

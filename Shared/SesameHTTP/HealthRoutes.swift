import Foundation
import Hummingbird

/// `GET /health/live` (the process answers) and `GET /health/ready` (its dependencies answer).
///
/// Readiness runs every check concurrently. All pass: 200 `ready`. Only checks the instance can
/// serve without fail: 200 `degraded` (it stays in the balancer). A required check fails: 503
/// `unavailable`. The body names each check, e.g.
/// `{"status": "degraded", "checks": {"kafka": "down", "postgres": "up"}}`; a failing check with
/// more to say adds it under `details`: in full on the service's own port, and only what anyone
/// may know (counts, never names) for a request that came through the gateway, which always
/// sets `X-Forwarded-For`.
public struct HealthRoutes<Context: RequestContext>: Sendable {
    /// The dependencies readiness reports on.
    public let checks: [ReadinessCheck]

    /// Creates the routes over `checks`.
    public init(checks: [ReadinessCheck]) {
        self.checks = checks
    }

    /// Adds both routes to `router`.
    public func register(on router: Router<Context>) {
        router.get("/health/live") { _, _ in
            Self.json(.ok, ["status": "live"])
        }
        router.get("/health/ready") { request, _ in
            let results = await self.evaluate()
            let failed = checks.filter { results[$0.name] == false }
            let status =
                failed.isEmpty ? "ready" : failed.contains { $0.impact == .required } ? "unavailable" : "degraded"
            var body: [String: Any] = ["status": status, "checks": results.mapValues { $0 ? "up" : "down" }]
            let throughGateway = request.headers[.xForwardedFor] != nil
            let details = failed.reduce(into: [String: String]()) { $0[$1.name] = throughGateway ? $1.publicDetail() : $1.detail() }
            if !details.isEmpty { body["details"] = details }
            return Self.json(status == "unavailable" ? .serviceUnavailable : .ok, body)
        }
    }

    /// Runs every check at once; the result maps each check's name to whether it passed.
    public func evaluate() async -> [String: Bool] {
        await withTaskGroup(of: (String, Bool).self) { group in
            for check in checks {
                group.addTask { (check.name, await check.isReady()) }
            }
            var results: [String: Bool] = [:]
            for await (name, ready) in group { results[name] = ready }
            return results
        }
    }

    private static func json(_ status: HTTPResponse.Status, _ body: [String: Any]) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])) ?? Data("{}".utf8)
        return Response(
            status: status,
            headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: data))
        )
    }
}

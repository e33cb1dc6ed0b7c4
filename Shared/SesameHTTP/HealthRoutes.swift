import Foundation
import Hummingbird

/// `GET /health/live` (the process answers) and `GET /health/ready` (its dependencies answer).
///
/// Readiness runs every check concurrently and answers 200 only when all pass; otherwise 503 with
/// a body naming what is down, e.g. `{"status": "unavailable", "checks": {"postgres": "down"}}`.
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
        router.get("/health/ready") { _, _ in
            let results = await self.evaluate()
            let allUp = results.values.allSatisfy { $0 }
            let body: [String: Any] = [
                "status": allUp ? "ready" : "unavailable",
                "checks": results.mapValues { $0 ? "up" : "down" },
            ]
            return Self.json(allUp ? .ok : .serviceUnavailable, body)
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

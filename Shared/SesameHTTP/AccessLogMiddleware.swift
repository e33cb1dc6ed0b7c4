import Hummingbird
import Logging
import NIOCore
import SesameConfiguration

/// Logs one line per request: method, route (not the raw URI: query strings can carry user ids),
/// status and duration. Header values — tokens, keys — are never logged.
public struct AccessLogMiddleware<Context: RequestContext>: RouterMiddleware {
    /// Creates the middleware.
    public init() {}

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let response = try await next(request, context)
        AccessLog.record(
            context.logger, method: request.method, route: context.endpointPath ?? "unmatched", status: response.status,
            elapsed: ContinuousClock.now - start)
        return response
    }
}

/// The access log's line, the same whoever answered (the router, or a `FastPathRoute`).
public enum AccessLog {
    /// Logs one answered request at `info`.
    public static func record(_ logger: Logger, method: HTTPRequest.Method, route: String, status: HTTPResponse.Status, elapsed: Duration) {
        logger.info(
            "request",
            metadata: [
                "http.method": "\(method.rawValue)",
                "http.route": "\(route)",
                "http.status": "\(status.code)",
                "duration_ms": "\((elapsed.inSeconds * 100_000).rounded() / 100)",
            ]
        )
    }
}

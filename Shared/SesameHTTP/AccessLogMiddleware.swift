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
        let elapsed = ContinuousClock.now - start
        let milliseconds = elapsed.inSeconds * 1000
        context.logger.info(
            "request",
            metadata: [
                "http.method": "\(request.method.rawValue)",
                "http.route": "\(context.endpointPath ?? "unmatched")",
                "http.status": "\(response.status.code)",
                "duration_ms": "\((milliseconds * 100).rounded() / 100)",
            ]
        )
        return response
    }
}

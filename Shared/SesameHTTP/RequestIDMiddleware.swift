import Hummingbird

/// Puts the request id Hummingbird gives every request (the `hb.request.id` in each log line) on
/// the response as `X-Request-Id`, so a client report can be matched to the logs.
public struct RequestIDMiddleware<Context: RequestContext>: RouterMiddleware {
    /// Creates the middleware.
    public init() {}

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        response.headers[SesameHeaders.requestID] = context.id
        return response
    }
}

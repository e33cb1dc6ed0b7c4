import Hummingbird

/// Refuses bodies over a size limit before they are read: at once from `Content-Length`, and
/// while collecting a streamed body through the context's `maxUploadSize`.
public struct RequestLimitsMiddleware: RouterMiddleware {
    public typealias Context = SesameRequestContext

    /// The default limit, in bytes.
    public let maxBodyBytes: Int

    /// Creates the middleware with a default limit of `maxBodyBytes`.
    public init(maxBodyBytes: Int) {
        self.maxBodyBytes = maxBodyBytes
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let declared = request.headers[.contentLength].flatMap({ Int($0) }), declared > maxBodyBytes {
            throw APIError.forStatus(.contentTooLarge)
        }
        var context = context
        context.maxUploadSize = maxBodyBytes
        return try await next(request, context)
    }
}

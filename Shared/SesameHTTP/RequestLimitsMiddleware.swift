import Hummingbird

/// Refuses bodies over a size limit before they are read: at once from `Content-Length`, and
/// while collecting a streamed body through the context's `maxUploadSize`.
///
/// It runs before routing, so the limit is chosen by path: the longest matching prefix in
/// `limitsByPathPrefix` (a service's uploads may be larger, its small JSON endpoints smaller),
/// else the default.
public struct RequestLimitsMiddleware: RouterMiddleware {
    public typealias Context = SesameRequestContext

    /// The limit, in bytes, of paths no prefix covers.
    public let maxBodyBytes: Int
    /// Path prefixes (`/v1/admin/blob/`) and their limits.
    private let limitsByPathPrefix: [(prefix: String, bytes: Int)]

    /// Creates the middleware with a default limit of `maxBodyBytes` and per-prefix exceptions.
    public init(maxBodyBytes: Int, limitsByPathPrefix: [String: Int] = [:]) {
        self.maxBodyBytes = maxBodyBytes
        self.limitsByPathPrefix = limitsByPathPrefix.map { ($0.key, $0.value) }.sorted { $0.prefix.count > $1.prefix.count }
    }

    /// The limit that applies to `path`.
    public func limit(for path: String) -> Int {
        limitsByPathPrefix.first { path.hasPrefix($0.prefix) }?.bytes ?? maxBodyBytes
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let limit = limit(for: request.uri.path)
        if let declared = request.headers[.contentLength].flatMap({ Int($0) }), declared > limit {
            throw APIError.forStatus(.contentTooLarge)
        }
        var context = context
        context.maxUploadSize = limit
        return try await next(request, context)
    }
}

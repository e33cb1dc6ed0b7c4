import Hummingbird

/// Refuses bodies over a size limit before they are read: at once from `Content-Length`, and
/// while collecting a streamed body through the context's `maxUploadSize`.
///
/// It runs before routing, so an oversized body is refused whatever route it aims at. The limit is
/// chosen by path: the most specific prefix in `limitsByPathPrefix` (a service's uploads may be
/// larger, its small JSON endpoints smaller; each declared with its route group, see
/// `ServiceParts`), else the default.
public struct RequestLimitsMiddleware: RouterMiddleware {
    public typealias Context = SesameRequestContext

    /// The limit, in bytes, of paths no prefix covers.
    public let maxBodyBytes: Int
    /// Path prefixes (`/v1/admin/blob`) and their limits, the most specific first.
    private let limitsByPathPrefix: [(prefix: PathPrefix, bytes: Int)]

    /// Creates the middleware with a default limit of `maxBodyBytes` and per-prefix exceptions.
    public init(maxBodyBytes: Int, limitsByPathPrefix: [PathPrefix: Int] = [:]) {
        self.maxBodyBytes = maxBodyBytes
        self.limitsByPathPrefix = limitsByPathPrefix.map { ($0.key, $0.value) }.sorted { $0.prefix.depth > $1.prefix.depth }
    }

    /// The limit that applies to `path`.
    public func limit(for path: String) -> Int {
        limitsByPathPrefix.first { $0.prefix.covers(path) }?.bytes ?? maxBodyBytes
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

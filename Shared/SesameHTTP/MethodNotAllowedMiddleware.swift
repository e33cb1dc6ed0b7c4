import HTTPTypes
import Hummingbird
import Synchronization

/// Answers `405 method_not_allowed` with an `Allow` header for a path the router serves under other
/// methods (RFC 9110 §15.5.6). Hummingbird's router answers 404 for both an unknown path and an
/// unknown method, which tells a client its URL is wrong when only its method is.
public struct MethodNotAllowedMiddleware<Context: RequestContext>: RouterMiddleware {
    let routes: RouteMethods

    /// Creates the middleware over `routes`, which the router's routes fill once they are added.
    public init(routes: RouteMethods) {
        self.routes = routes
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound && [nil, "NotFound"].contains(context.endpointPath) {
            // No route matched: Hummingbird's not-found responder marks the endpoint "NotFound"; a
            // handler's own 404 carries its route's path.
            let allowed = routes.methods(for: request.uri.path)
            guard !allowed.isEmpty else { throw error }
            var refusal = APIError.forStatus(.methodNotAllowed)
            refusal.headers[.allow] = allowed.joined(separator: ", ")
            throw refusal
        }
    }
}

/// The methods each route path is served under, for `MethodNotAllowedMiddleware`.
public final class RouteMethods: Sendable {
    private struct Route {
        let segments: [Substring]
        var methods: Set<String>
    }

    private let routes = Mutex<[Route]>([])

    public init() {}

    /// Adds routes as `Router.methodsAndPaths` lists them: a method and a path such as `/v1/blob/{key}`.
    public func add(_ routes: [(method: String, path: String)]) {
        self.routes.withLock { known in
            for route in routes {
                let segments = route.path.split(separator: "/")
                if let index = known.firstIndex(where: { $0.segments == segments }) {
                    known[index].methods.insert(route.method)
                } else {
                    known.append(Route(segments: segments, methods: [route.method]))
                }
            }
        }
    }

    /// The methods of the route the router resolves `path` to, sorted; empty when it resolves to none.
    /// As in the router, a literal segment beats a parameter (`/v1/admin/blob/upload` is not
    /// `/v1/admin/blob/{key}`).
    public func methods(for path: String) -> [String] {
        let segments = path.split(separator: "/")
        let matching = routes.withLock { known in
            known.filter { route in
                route.segments.count == segments.count
                    && zip(route.segments, segments).allSatisfy { template, segment in Self.isParameter(template) || template == segment }
            }
        }
        let chosen = matching.max { first, second in
            // Whether `second` is more literal at the first segment where they differ.
            first.segments.map { !Self.isParameter($0) }.lexicographicallyPrecedes(second.segments.map { !Self.isParameter($0) }) { !$0 && $1 }
        }
        return chosen?.methods.sorted() ?? []
    }

    private static func isParameter(_ segment: Substring) -> Bool {
        segment.hasPrefix("{") && segment.hasSuffix("}")
    }
}

extension Router {
    /// Every route added so far, as a method and a path template (`GET`, `/v1/blob/{key}`).
    public var methodsAndPaths: [(method: String, path: String)] {
        routes.map { (method: $0.method.rawValue, path: $0.path.description) }
    }
}

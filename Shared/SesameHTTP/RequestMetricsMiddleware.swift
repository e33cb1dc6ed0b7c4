import Dispatch
import Hummingbird
import Metrics
import Synchronization

/// Counts requests and records their durations by route, method and status, under the names
/// Hummingbird's `MetricsMiddleware` uses: `hb.requests`, `http.server.request.duration`,
/// `hb.request.errors` and `http.server.active_requests`.
///
/// Why not Hummingbird's: it records once the body is written, by wrapping the body in a closure.
/// That turns off Hummingbird's single-write path for a buffered body — head, body and end then
/// reach the channel as three writes, each a hop to the event loop — and cost delivery's hot path
/// about a quarter of its throughput (measured with `./sesame-dev bench delivery`). This one
/// records when the handler returns, so for a streamed body the duration ends at its head. It also
/// times failures, gives error series only to routes that failed, and counts methods outside the
/// standard ones as `_OTHER`, so invented methods cannot grow the number of series without bound.
public struct RequestMetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    private let metrics: RequestMetrics

    /// Creates the middleware.
    /// - Parameter metrics: the cache of metric handles, shared with whoever else answers requests.
    public init(metrics: RequestMetrics = RequestMetrics()) {
        self.metrics = metrics
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let started = DispatchTime.now().uptimeNanoseconds
        let active = metrics.activeRequests(method: request.method)
        active.increment()
        defer { active.decrement() }
        do {
            let response = try await next(request, context)
            metrics.record(RequestMetrics.Route(path: context.endpointPath ?? "Unknown", method: request.method, status: response.status), since: started)
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status ?? .internalServerError
            let route = RequestMetrics.Route(path: context.endpointPath ?? "NotFound", method: request.method, status: status)
            metrics.record(route, since: started)
            metrics.errors(route).increment()
            throw error
        }
    }
}

/// Metric handles by method and by route, created once: the metrics factory's own lookup is slower.
/// Whoever answers a request records it here (the middleware, or a `FastPathRoute`'s handler).
public final class RequestMetrics: Sendable {
    /// A route's series: its path pattern, method and status.
    public struct Route: Hashable, Sendable {
        let path: String
        let method: String
        let status: HTTPResponse.Status

        /// The series of `path` (the route's pattern, not the raw URI), `method` and `status`.
        public init(path: String, method: HTTPRequest.Method, status: HTTPResponse.Status) {
            self.path = path
            self.method = RequestMetrics.label(of: method)
            self.status = status
        }

        var dimensions: [(String, String)] { [("http.route", path), ("http.request.method", method)] }
    }

    private static let standardMethods: Set<HTTPRequest.Method> = [.get, .head, .post, .put, .delete, .patch, .options, .connect, .trace]

    /// The method's label: its name when standard, else `_OTHER` (OpenTelemetry's convention).
    static func label(of method: HTTPRequest.Method) -> String {
        standardMethods.contains(method) ? method.rawValue : "_OTHER"
    }

    struct RouteMetrics: Sendable {
        let requests: Counter
        let duration: Metrics.Timer

        init(_ route: Route) {
            let dimensions = route.dimensions + [("http.response.status_code", String(route.status.code))]
            requests = Counter(label: "hb.requests", dimensions: dimensions)
            duration = Metrics.Timer(label: "http.server.request.duration", dimensions: dimensions, preferredDisplayUnit: .seconds)
        }
    }

    /// Creates an empty cache of handles.
    public init() {}

    /// Counts one answered request of `route` and records its duration since `started`
    /// (`DispatchTime` nanoseconds).
    public func record(_ route: Route, since started: UInt64) {
        let handles = self.route(route)
        handles.requests.increment()
        handles.duration.recordNanoseconds(DispatchTime.now().uptimeNanoseconds - started)
    }

    private let byMethod = Mutex<[String: Meter]>([:])
    private let byRoute = Mutex<[Route: RouteMetrics]>([:])
    /// Apart from `byRoute`, so that routes that never fail have no error series.
    private let errorsByRoute = Mutex<[Route: Counter]>([:])

    func activeRequests(method: HTTPRequest.Method) -> Meter {
        let label = Self.label(of: method)
        return byMethod.withLock { meters in
            if let meter = meters[label] { return meter }
            let meter = Meter(label: "http.server.active_requests", dimensions: [("http.request.method", label)])
            meters[label] = meter
            return meter
        }
    }

    func route(_ route: Route) -> RouteMetrics {
        byRoute.withLock { routes in
            if let metrics = routes[route] { return metrics }
            let metrics = RouteMetrics(route)
            routes[route] = metrics
            return metrics
        }
    }

    func errors(_ route: Route) -> Counter {
        errorsByRoute.withLock { counters in
            if let counter = counters[route] { return counter }
            let counter = Counter(label: "hb.request.errors", dimensions: route.dimensions + [("error.type", String(route.status.code))])
            counters[route] = counter
            return counter
        }
    }
}

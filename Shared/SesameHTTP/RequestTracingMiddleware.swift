import HTTPTypes
import Hummingbird
import SesameTracing
import Tracing

/// A server span per request, continuing the caller's W3C trace context (`traceparent`), named by
/// the route's pattern (`/v1/admin/apps/{appId}/config`); a streamed answer's span lasts as long as
/// the stream.
///
/// Hummingbird's `TracingMiddleware` is not used because it records `url.path` and `url.query`
/// whole: a blob link's signature, a relay's upstream path and anything a client puts in a query
/// would reach the trace backend. This records the route's pattern, the method, the status and the
/// request id; never a path, a query, a header or a body. Added only when tracing is on
/// (`SesameTracing.isEnabled`): a service that does not trace runs without it.
public struct RequestTracingMiddleware<Context: RequestContext>: RouterMiddleware {
    /// Creates the middleware.
    public init() {}

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var headers: [String: String] = [:]
        for name in SesameTracing.headerNames {
            if let field = HTTPField.Name(name), let value = request.headers[field] { headers[name] = value }
        }
        // A method outside the standard ones is `_OTHER` (OpenTelemetry's convention): a client's
        // made-up method is text of its choosing.
        let method = RequestMetrics.label(of: request.method)
        let span = startSpan("HTTP \(method)", context: SesameTracing.context(continuing: headers), ofKind: .server)
        span.attributes["http.request.method"] = method
        span.attributes["sesame.request_id"] = context.id
        do {
            var response = try await ServiceContext.$current.withValue(span.context) { try await next(request, context) }
            name(span, request: request, context: context)
            span.attributes["http.response.status_code"] = Int(response.status.code)
            if response.status.code >= 500 { span.setStatus(SpanStatus(code: .error)) }
            // A body of known length is written at once; a stream (no length) ends its span when
            // it ends.
            guard response.body.contentLength == nil else {
                span.end()
                return response
            }
            let (ending, streamed) = (SpanEnding(span: span), response.body)
            response.body = ResponseBody { writer in
                defer { ending.end() }
                try await streamed.write(writer)
            }
            return response
        } catch {
            name(span, request: request, context: context)
            let status = (error as? any HTTPResponseError)?.status.code ?? 500
            span.attributes["http.response.status_code"] = Int(status)
            SesameTracing.recordFailure(error, on: span, isError: status >= 500)
            span.end()
            throw error
        }
    }

    private func name(_ span: any Span, request: Request, context: Context) {
        guard let route = context.endpointPath else { return }
        span.operationName = "\(RequestMetrics.label(of: request.method)) \(route)"
        span.attributes["http.route"] = route
    }
}

/// Ends a span from the body writer's closure (which must be `Sendable`; tracers' spans are safe
/// to end from any task, `Span` just does not say so).
private struct SpanEnding: @unchecked Sendable {
    let span: any Span
    func end() { span.end() }
}

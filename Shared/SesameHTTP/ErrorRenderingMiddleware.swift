import Hummingbird
import Logging

/// Turns every error into the uniform JSON error body, so no handler can leak an internal message.
///
/// `APIError`s render as they are. Hummingbird's own `HTTPError`s keep their status but get a generic
/// message (theirs can echo decoder internals). Anything else becomes a 500 whose cause is logged,
/// by type and description, with the request id — never sent to the client.
public struct ErrorRenderingMiddleware<Context: RequestContext>: RouterMiddleware {
    /// Creates the middleware.
    public init() {}

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            return try error.response(from: request, context: context)
        } catch let error as any HTTPResponseError {
            var rendered = APIError.forStatus(error.status)
            if let httpError = error as? HTTPError { rendered.headers = httpError.headers }
            if error.status == .badRequest, context.endpointPath != nil {
                rendered = APIError(.badRequest, code: CommonErrorCode.invalidBody, message: "The request body is not valid JSON of the expected shape.")
            }
            return try rendered.response(from: request, context: context)
        } catch {
            context.logger.error(
                "unhandled error",
                metadata: ["error.type": "\(type(of: error))", "error": "\(String(describing: error))"]
            )
            return try APIError.internalError.response(from: request, context: context)
        }
    }
}

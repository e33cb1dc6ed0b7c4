import Foundation
import Hummingbird

/// An error a client may see: a stable machine `code`, a human `message`, and the HTTP status.
///
/// Renders as `{"error": {"code": "…", "message": "…"}}`. Messages are written for clients: never a
/// database or Kafka message, a stack trace or a secret.
public struct APIError: Error, HTTPResponseError, Equatable, Sendable {
    /// The HTTP status.
    public var status: HTTPResponse.Status
    /// A stable, snake_case code clients can switch on, e.g. `unknown_app`.
    public private(set) var code: String
    /// A sentence saying what went wrong and, where it helps, what to do.
    public var message: String
    /// Extra response headers, e.g. `Retry-After`.
    public var headers: HTTPFields
    /// Each way a document failed its checks (a config against its schema), listed by path.
    public var violations: [Violation]?

    /// One way a document failed: where (a JSON pointer), which rule, what to do, and which set of
    /// rules (a config schema's scope) it broke.
    public struct Violation: Codable, Hashable, Sendable {
        public let path: String
        public let keyword: String
        public let message: String
        public let schema: String?

        public init(path: String, keyword: String, message: String, schema: String? = nil) {
            self.path = path
            self.keyword = keyword
            self.message = message
            self.schema = schema
        }
    }

    /// Creates an error with one of the declared codes (`ErrorCodes`), so that every code a client
    /// can see is written once, in its service's list, and documented.
    public init(
        _ status: HTTPResponse.Status, code: some ErrorCodes, message: String, headers: HTTPFields = [:], violations: [Violation]? = nil
    ) {
        self.status = status
        self.code = code.rawValue
        self.message = message
        self.headers = headers
        self.violations = violations
    }

    private struct Body: Encodable {
        struct Detail: Encodable {
            let code: String
            let message: String
            let violations: [Violation]?
        }
        let error: Detail
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        let (headers, body) = try rendered()
        return Response(status: status, headers: headers, body: .init(byteBuffer: body))
    }

    /// The response's headers and JSON body, for whoever writes it (the router's middleware, or a
    /// `FastPathRoute` answering on the event loop).
    public func rendered() throws -> (headers: HTTPFields, body: ByteBuffer) {
        // Sorted keys: the same refusal is the same bytes, whatever the cause behind it.
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let data = try encoder.encode(Body(error: .init(code: code, message: message, violations: violations)))
        var headers = self.headers
        headers[.contentType] = "application/json; charset=utf-8"
        return (headers, ByteBuffer(bytes: data))
    }
}

extension APIError {
    /// 500 with nothing of the cause: the cause goes to the log, with the request id.
    public static let internalError = APIError(
        .internalServerError, code: CommonErrorCode.internalError, message: "An internal error occurred; it has been logged with this request's id."
    )

    /// 503 while PostgreSQL does not answer: the client should retry, not report a bug.
    public static let databaseUnavailable = APIError(
        .serviceUnavailable, code: CommonErrorCode.serviceUnavailable, message: "The service's database is not answering; retry shortly.",
        headers: [.retryAfter: "5"])

    /// 503 while every database connection is busy and the wait for one is full.
    public static let databaseBusy = APIError(
        .serviceUnavailable, code: CommonErrorCode.serviceUnavailable, message: "The service is busy; retry shortly.", headers: [.retryAfter: "1"])

    /// The generic error for a status Hummingbird raised itself (no route, body too large, …).
    public static func forStatus(_ status: HTTPResponse.Status) -> APIError {
        switch status {
        case .notFound: APIError(status, code: CommonErrorCode.notFound, message: "No such resource.")
        case .methodNotAllowed: APIError(status, code: CommonErrorCode.methodNotAllowed, message: "This method is not allowed here.")
        case .contentTooLarge: APIError(status, code: CommonErrorCode.payloadTooLarge, message: "The request body is larger than this endpoint accepts.")
        case .badRequest: APIError(status, code: CommonErrorCode.badRequest, message: "The request is malformed.")
        case .unsupportedMediaType: APIError(status, code: CommonErrorCode.unsupportedMediaType, message: "Send the body as application/json.")
        default:
            // Any other refusal keeps its status and says `bad_request`: every code a client sees is a declared one.
            status.code >= 500 ? .internalError : APIError(status, code: CommonErrorCode.badRequest, message: status.reasonPhrase)
        }
    }
}

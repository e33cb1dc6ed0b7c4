import Foundation
import HTTPTypes
import OpenAPIRuntime
import OpenAPIURLSession
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The management API's generated client (`Client`, from `Services/admin/openapi.yaml`) with what
/// every command needs around it: the credential, the server's refusals as `CLIFailure`s, and the
/// reply's bytes as the server sent them, for `--json`.
struct ManagementClient: Sendable {
    /// URLSession, as before the generated client: it takes the system's proxy settings (and, on
    /// Linux, `https_proxy`). 60 s without a byte ends a call; 10 minutes ends any.
    private static let session: URLSession = {
        let configuration = URLSessionConfiguration.default
        configuration.timeoutIntervalForRequest = 60
        configuration.timeoutIntervalForResource = 600
        return URLSession(configuration: configuration)
    }()

    /// The largest reply read (a config body is at most `SESAME_MAX_CONFIG_BYTES`, 1 MiB by default;
    /// a page of the audit log or devices is far below).
    static let replyLimit = 32 * 1024 * 1024

    let baseURL: URL
    private let api: Client
    private let lastReply: ReplyRecorder

    init(baseURL: URL, credential: String) {
        self.baseURL = baseURL
        let recorder = ReplyRecorder()
        lastReply = recorder
        api = Client(
            serverURL: baseURL,
            transport: URLSessionTransport(configuration: .init(session: Self.session)),
            middlewares: [ReplyMiddleware(credential: credential, recorder: recorder)])
    }

    /// The answer of `operation`, decoded; `CLIFailure` for a refusal (exit 1) or a server that
    /// cannot be reached or read (exit 2).
    func call<Answer>(_ operation: (Client) async throws -> Answer) async throws(CLIFailure) -> Answer {
        do {
            return try await operation(api)
        } catch let error as ClientError {
            if let failure = error.underlyingError as? CLIFailure { throw failure }
            if error.response == nil {
                throw CLIFailure(
                    "cannot reach Sesame at \(baseURL.absoluteString) (\(error.underlyingError)); check --url or SESAME_URL", exitCode: 2)
            }
            throw CLIFailure("the server's reply to \(error.operationID) could not be read (\(error.underlyingError))", exitCode: 2)
        } catch let failure as CLIFailure {
            throw failure
        } catch {
            throw CLIFailure("the server's reply could not be read (\(error))", exitCode: 2)
        }
    }

    /// The last successful reply's body, as the server sent it.
    var rawReply: String { String(decoding: lastReply.bytes, as: UTF8.self) }

    /// The last successful reply's `message`, or `fallback`.
    func message(or fallback: String) -> String {
        (try? JSONDecoder().decode(Confirmation.self, from: lastReply.bytes))?.message ?? fallback
    }

    /// The one field every confirmation carries.
    private struct Confirmation: Decodable {
        let message: String?
    }

    /// What to try next, for the statuses where it is not obvious.
    static func hint(status: Int) -> String {
        switch status {
        case 401: " (check SESAME_KEY: the key may be mistyped or revoked)"
        case 404: " (check the app, pattern or revision; keys only see their own app)"
        case 413: " (the file is larger than the server accepts)"
        case 429: " (wait and retry)"
        case 500...: " (a server problem; its logs have the details under the reply's request id)"
        default: ""
        }
    }

    /// A blob's media type, which rides in the request's `Content-Type`: the document declares
    /// `application/octet-stream` (any bytes), and the generated client sends only that.
    @TaskLocal static var blobContentType: String?
}

/// The bytes of the last reply, shared between the middleware that reads them and the command.
private final class ReplyRecorder: Sendable {
    private let stored = Mutex<[UInt8]>([])

    var bytes: Data { Data(stored.withLock { $0 }) }

    func record(_ bytes: [UInt8]) { stored.withLock { $0 = bytes } }
}

/// Adds the credential; reads each reply whole (bounded), keeps a success's bytes and turns a
/// refusal into a `CLIFailure` with the server's message, a hint and, for a config its schema
/// refused, every violation.
private struct ReplyMiddleware: ClientMiddleware {
    let credential: String
    let recorder: ReplyRecorder

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        request.headerFields[.authorization] = "Bearer \(credential)"
        if operationID == "putBlob", let contentType = ManagementClient.blobContentType { request.headerFields[.contentType] = contentType }
        let (response, responseBody) = try await next(request, body, baseURL)
        var bytes: [UInt8] = []
        // Read here rather than with `collecting(upTo:)`, whose error type is private: past the limit
        // the user reads what happened, not an internal error's name.
        for try await chunk in responseBody ?? HTTPBody() {
            guard bytes.count + chunk.count <= ManagementClient.replyLimit else {
                throw CLIFailure("the server's reply is larger than \(ManagementClient.replyLimit >> 20) MiB, the most the CLI reads", exitCode: 2)
            }
            bytes += chunk
        }
        guard response.status.kind == .successful else { throw Self.refusal(status: response.status.code, body: bytes) }
        recorder.record(bytes)
        return (response, HTTPBody(bytes))
    }

    /// The server's error document as one failure.
    static func refusal(status: Int, body: [UInt8]) -> CLIFailure {
        let error = (try? JSONDecoder().decode(Refusal.self, from: Data(body)))?.error
        let message = error?.message ?? "the server answered HTTP \(status)"
        // A config refused by its schema: every violation, one per line, as `config validate` prints them.
        let violations = (error?.violations ?? []).map { violation in
            "\n  \(violation.path ?? "") \(violation.message ?? "") [\(violation.keyword ?? ""), \(violation.schema ?? "")]"
        }
        return CLIFailure(message + ManagementClient.hint(status: status) + violations.joined(), exitCode: 1)
    }

    /// Sesame's error document, read leniently: whatever the refusal, its message reaches the user.
    private struct Refusal: Decodable {
        struct Detail: Decodable {
            let message: String?
            let violations: [Violation]?
        }

        struct Violation: Decodable {
            let path: String?
            let message: String?
            let keyword: String?
            let schema: String?
        }

        let error: Detail?
    }
}

import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import SesameHTTP
import SesameDomain

/// `GET /v1/config` answered on the event loop (`FastPathRoute`) for a caller whose token this
/// instance has verified before — an app's every fetch after its first. Anything else (a new
/// token, a missing one) goes to `ConfigRoutes` through the router, which answers with the same code.
struct ConfigFastPath: FastPathRoute {
    let routes: ConfigRoutes
    let logger: Logger
    private let queries = QueryCache()

    init(routes: ConfigRoutes, logger: Logger) {
        self.routes = routes
        self.logger = logger
    }

    var path: String { "/v1/config" }

    func answer(_ request: FastPathRequest) -> FastPathAnswer? {
        let headers = request.head.headerFields
        guard let token = headers.bearerCredential, let claims = routes.gate.tokens.remembered(token) else { return nil }
        do {
            let query = try queries.query(of: request.head.path ?? "")
            try routes.gate.limitClient(peer: request.peer, headers: headers)
            let caller = try routes.gate.authenticated(claims)
            let answer = try routes.answer(query, caller: caller, ifNoneMatch: headers.value(of: .ifNoneMatch), now: Date(), mayParse: false)
            return .response(status: answer.status, headers: answer.headers, body: answer.body)
        } catch is ConfigRoutes.NotOnEventLoop {
            // A scope not cut yet: parsing belongs off the event loop, in the router's task.
            return nil
        } catch let refusal as APIError {
            return .refusal(refusal)
        } catch {
            // As ErrorRenderingMiddleware does: the cause to the log, nothing of it to the client.
            logger.error("unhandled error", metadata: ["error.type": "\(type(of: error))", "error": "\(String(describing: error))"])
            return .refusal(.internalError)
        }
    }
}

/// Parsed queries by request target. An app's installs ask a few targets over and over
/// (`/v1/config?version=2.1.3`), and parsing one cost more than the rest of the answer.
struct QueryCache: Sendable {
    private let parsed = BoundedMemo<String, ConfigRoutes.Query>()

    /// The query of `target` (path and query string); `invalid_version` as `ConfigRoutes.Query` throws it.
    func query(of target: String) throws -> ConfigRoutes.Query {
        try parsed.value(for: target) { try ConfigRoutes.Query(URI($0)) }
    }
}

import Hummingbird
import SesameHTTP
import SesameStorage

/// Binds the deployment's audit seal (`AuditSeal`) for the work of each request, so every audit
/// entry a request appends is sealed, and `audit verify` checks the seals.
struct AuditSealMiddleware: RouterMiddleware {
    typealias Context = SesameRequestContext

    let seal: AuditSeal

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        try await AuditSeal.$bound.withValue(seal) { try await next(request, context) }
    }
}

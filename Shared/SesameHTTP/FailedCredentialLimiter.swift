import Hummingbird
import HTTPTypes
import SesameConfiguration

/// Stands before every lookup of a presented credential on a group's routes (provisioning keys,
/// backend keys, dashboard sessions): each lookup is a database query, so an outsider presenting
/// random credentials would cost one each for free. Every `401` to a request that presented a
/// credential (`Authorization` or a cookie; a request with none costs no lookup) spends one of
/// its client address's failures (an IPv6 client's /64); an address that spent its budget is
/// refused `429 rate_limited` before its request reaches a lookup, until its budget refills.
/// Callers with valid credentials never spend anything; where a route answers `401` about
/// something else than the caller's own credential (a user's token or assertion under test by a
/// valid backend key), only the codes named `callerCredentialCodes` spend.
public struct FailedCredentialLimiter: RouterMiddleware {
    public typealias Context = SesameRequestContext

    /// Failed credentials one address regains a second, after its burst
    /// (`SESAME_FAILED_CREDENTIALS_PER_ADDRESS`, 100 by default) is spent.
    public static let ratePerSecond = 2.0

    let failures: RateLimiter
    let clients: ClientAddressResolver
    /// The `401` codes that say the caller's own credential failed; nil: every `401` does.
    let callerCredentialCodes: Set<String>?

    /// - Parameter callerCredentialCodes: the error codes of the `401`s that refuse the caller's own
    ///   credential, when the routes answer other `401`s too; nil when every `401` refuses it.
    public init(clients: ClientAddressResolver, burst: Int, callerCredentialCodes: Set<String>? = nil) {
        failures = RateLimiter(.init(rate: Self.ratePerSecond, burst: Double(burst)))
        self.clients = clients
        self.callerCredentialCodes = callerCredentialCodes
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard request.headers[.authorization] != nil || request.headers[.cookie] != nil else { return try await next(request, context) }
        let address = clients.limitKey(of: request, context: context)
        if let wait = failures.wait(for: address) { throw APIError.rateLimited(retryAfter: max(1, wait.secondsRoundedUp)) }
        do {
            let response = try await next(request, context)
            if response.status == .unauthorized, callerCredentialCodes == nil { _ = failures.acquire(address) }
            return response
        } catch let error as APIError where error.status == .unauthorized {
            if callerCredentialCodes?.contains(error.code) ?? true { _ = failures.acquire(address) }
            throw error
        }
    }
}

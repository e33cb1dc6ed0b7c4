import Hummingbird
import HTTPTypes
import SesameConfiguration

/// Stands before every lookup of a presented credential on a group's routes (provisioning keys,
/// backend keys, dashboard sessions): each lookup is a database query, so an outsider presenting
/// random credentials would cost one each for free. Every `401` to a request that presented a
/// credential (`Authorization` or a cookie; a request with none costs no lookup) spends one of
/// its client address's failures (an IPv6 client's /64); an address that spent its budget is
/// refused `429 rate_limited` before its request reaches a lookup, until its budget refills.
/// Callers with valid credentials never spend anything.
public struct FailedCredentialLimiter: RouterMiddleware {
    public typealias Context = SesameRequestContext

    /// Failed credentials one address regains a second, after its burst
    /// (`SESAME_FAILED_CREDENTIALS_PER_ADDRESS`, 100 by default) is spent.
    public static let ratePerSecond = 2.0

    let failures: RateLimiter
    let clients: ClientAddressResolver

    public init(clients: ClientAddressResolver, burst: Int) {
        failures = RateLimiter(.init(rate: Self.ratePerSecond, burst: Double(burst)))
        self.clients = clients
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard request.headers[.authorization] != nil || request.headers[.cookie] != nil else { return try await next(request, context) }
        let address = clients.limitKey(of: request, context: context)
        if let wait = failures.wait(for: address) { throw APIError.rateLimited(retryAfter: max(1, wait.secondsRoundedUp)) }
        do {
            let response = try await next(request, context)
            if response.status == .unauthorized { _ = failures.acquire(address) }
            return response
        } catch let error as APIError where error.status == .unauthorized {
            _ = failures.acquire(address)
            throw error
        }
    }
}

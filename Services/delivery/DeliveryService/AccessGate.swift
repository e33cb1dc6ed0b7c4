import Foundation
import Hummingbird
import JWTKit
import SesameDomain
import SesameHTTP
import SesameTokens

/// The check every delivery endpoint makes before it answers: the client's rate limits, a valid
/// access token and its key's rate limit, then the app's kill switches and emergency revocations
/// (`AccessRules`; `/v1/config` applies them through `AppRelease.resolve`, with the version it
/// serves), so a killed version or a revoked token is stopped everywhere, not only at `/v1/config`.
struct AccessGate: Sendable {
    let cache: DeliveryCache
    let tokens: AccessTokenVerifier
    let clients: ClientAddressResolver
    /// Per client address: generous, as many devices can share one behind carrier-grade NAT.
    let perClient: RateLimiter
    /// Per attested key: an install fetches a few documents at launch, then rarely.
    let perKey: RateLimiter
    /// Whether this is a production deployment: debug tokens' access tokens are then honoured only
    /// while the app's policy allows debug tokens in production.
    let inProduction: Bool

    /// - Parameters: requests per second per attested key and per client address; bursts are ten times these.
    init(
        cache: DeliveryCache, tokens: AccessTokenVerifier, clients: ClientAddressResolver, ratePerKey: Int, ratePerClient: Int,
        inProduction: Bool
    ) {
        self.cache = cache
        self.tokens = tokens
        self.clients = clients
        self.inProduction = inProduction
        perKey = RateLimiter(.init(rate: Double(ratePerKey), burst: Double(ratePerKey * 10)))
        perClient = RateLimiter(.init(rate: Double(ratePerClient), burst: Double(ratePerClient * 10)))
    }

    /// A caller whose token checked out, before the app's rules are applied.
    struct Authenticated: Sendable {
        let claims: AccessTokenClaims
        /// The app's state as it was when the caller was authenticated.
        let state: AppState

        /// What `AppRelease.resolve` knows of the caller's token: its version, its age, its
        /// subject (which places the install in or out of a rollout), and whether it is a
        /// development build (App Attest's development environment, or a debug token).
        var token: AppRelease<ServedConfig>.Token {
            .init(
                version: claims.appVersion, issuedAt: claims.issuedAt.value, install: claims.subject.value,
                development: claims.environment == "development" || claims.environment == "debug")
        }
    }

    /// A caller let through, with what the endpoint needs.
    struct Admitted: Sendable {
        let claims: AccessTokenClaims
        /// The app's state as it was when the caller was admitted.
        let state: AppState
        /// Seconds after which the app should refresh (a revocation's forced-refresh window).
        let refreshAfter: Int?
    }

    /// Spends the client's and the key's rate limits and checks the access token; the caller's
    /// app rules are left to the endpoint (`/v1/config` resolves them with the version it serves).
    func authenticate(_ request: Request, context: SesameRequestContext) async throws -> Authenticated {
        try limitClient(request, context: context)
        return try authenticated(try await tokens.claims(of: request))
    }

    /// The rest of `authenticate` once the token's claims are known: the key's rate limit, the
    /// app's state, the install's (or debug token's) revocation, and whether the app still admits
    /// the token's tier. Does not wait (the event loop's fast path uses it).
    func authenticated(_ claims: AccessTokenClaims) throws -> Authenticated {
        try perKey.enforce(claims.subject.value)
        return try standing(of: claims)
    }

    /// The caller's standing now, without spending a rate limit: the app's state, the install's
    /// (or debug token's) revocation and the tier. A live-config stream asks this at every notice.
    func standing(of claims: AccessTokenClaims) throws -> Authenticated {
        guard let state = cache.state(of: claims.appID) else { throw DeliveryErrors.appUnavailable }
        try checkStanding(subject: claims.subject.value, tier: claims.trustTier, in: state)
        return Authenticated(claims: claims, state: state)
    }

    /// Refuses a token subject that was revoked (a device, a debug token) and a tier the app's
    /// policy stopped admitting: a closed tier stops its tokens already issued, not only new ones.
    private func checkStanding(subject: String, tier: TrustTier, in state: AppState) throws {
        if state.revokedDevices.contains(subject) {
            throw tier == .debug ? DeliveryErrors.debugTokenRevoked : DeliveryErrors.deviceRevoked
        }
        switch tier {
        case .attested: break
        case .debug where !state.policy.allowsDebugTokens(inProduction: inProduction): throw DeliveryErrors.tierNoLongerAdmitted(.debug)
        case .unattested where !state.policy.admitUnattested: throw DeliveryErrors.tierNoLongerAdmitted(.unattested)
        case .debug, .unattested: break
        }
    }

    /// What an endpoint that names no version serves, each behind the tier the app's policy sets.
    enum Resource: Sendable {
        case blobs, userData

        func requiredTier(in policy: AppPolicy) -> TrustTier {
            switch self {
            case .blobs: policy.blobTier
            case .userData: policy.userDataTier
            }
        }

        var name: String {
            switch self {
            case .blobs: "Blobs are, by this app's policy,"
            case .userData: "Per-user data is, by this app's policy,"
            }
        }
    }

    /// Admits the bearer of the request's access token to `resource`, for an endpoint that names
    /// no version (the token's decides).
    func admit(_ request: Request, to resource: Resource, context: SesameRequestContext, now: Date = Date()) async throws -> Admitted {
        let caller = try await authenticate(request, context: context)
        return try admit(caller, tier: resource.requiredTier(in: caller.state.policy), what: resource.name, now: now)
    }

    /// Admits an authenticated caller to something served to `tier` and above (`what` names it in
    /// the refusal, as `Resource.name` does), under the app's kill switches and revocations.
    func admit(_ caller: Authenticated, tier required: TrustTier, what: String, now: Date = Date()) throws -> Admitted {
        guard caller.claims.trustTier.satisfies(required) else { throw DeliveryErrors.tierInsufficient(what, required: required) }
        let refreshAfter = try Self.enforce(
            caller.state.release.rules, tokenVersion: caller.claims.appVersion, issuedAt: caller.claims.issuedAt.value, now: now)
        return Admitted(claims: caller.claims, state: caller.state, refreshAfter: refreshAfter)
    }

    /// Spends one request of the client address's budget (for endpoints without a token).
    func limitClient(_ request: Request, context: SesameRequestContext) throws {
        try perClient.enforce(clients.limitKey(of: request, context: context))
    }

    /// Spends one request of the budget of the client at `peer` (behind `headers`' proxies).
    func limitClient(peer: String?, headers: HTTPFields) throws {
        try perClient.enforce(clients.limitKey(peer: peer, headers: headers))
    }

    /// Admits the bearer of a signed blob link as the token it was made for would be admitted now:
    /// its install (or debug token) not revoked, its tier still admitted and still enough for
    /// blobs, its version not switched off and its token not revoked. A link lives five minutes;
    /// anything decided meanwhile stops it at once.
    func admit(link grant: BlobLinks.Grant, now: Date = Date()) throws {
        guard let state = cache.state(of: grant.appID) else { throw DeliveryErrors.appUnavailable }
        try checkStanding(subject: grant.subject, tier: grant.tier, in: state)
        let required = Resource.blobs.requiredTier(in: state.policy)
        guard grant.tier.satisfies(required) else { throw DeliveryErrors.tierInsufficient(Resource.blobs.name, required: required) }
        _ = try Self.enforce(
            state.release.rules, tokenVersion: grant.tokenVersion, issuedAt: Date(timeIntervalSince1970: grant.tokenIssuedAt), now: now)
    }

    /// The refresh hint, or the refusal.
    private static func enforce(_ rules: AccessRules, tokenVersion: String?, issuedAt: Date, now: Date) throws -> Int? {
        switch rules.verdict(requestedVersion: nil, tokenVersionText: tokenVersion, issuedAt: issuedAt, now: now) {
        case .allowed(let refreshAfter): return refreshAfter
        case .disabled(let reason): throw APIError.versionDisabled(reason)
        case .revoked: throw DeliveryErrors.tokenRevoked
        }
    }
}

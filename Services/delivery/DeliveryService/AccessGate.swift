import Foundation
import Hummingbird
import SesameDomain
import SesameHTTP
import SesameTokens

/// The check every delivery endpoint makes before it answers: a valid access token, then the
/// app's kill switches and emergency revocations (`AccessRules`), so a killed version or a revoked
/// token is stopped everywhere, not only at `/v1/config`.
struct AccessGate: Sendable {
    let cache: DeliveryCache
    let tokens: AccessTokenVerifier

    /// A caller let through, with what the endpoint needs.
    struct Admitted: Sendable {
        let claims: AccessTokenClaims
        /// The app's state as it was when the caller was admitted.
        let state: AppState
        /// Seconds after which the app should refresh (a revocation's forced-refresh window).
        let refreshAfter: Int?
    }

    /// Admits the bearer of the request's access token, asking for `requestedVersion` (nil when the
    /// endpoint names no version: the token's decides).
    func admit(_ request: Request, requestedVersion: AppVersion? = nil, now: Date = Date()) async throws -> Admitted {
        let claims = try await tokens.claims(of: request)
        let state = cache.state(of: claims.appID) ?? AppState()
        let refreshAfter = try Self.enforce(
            state.rules, requestedVersion: requestedVersion, tokenVersion: claims.appVersion, issuedAt: claims.issuedAt.value, now: now)
        return Admitted(claims: claims, state: state, refreshAfter: refreshAfter)
    }

    /// Admits a caller already authenticated another way (a signed blob link), for the token
    /// version and issue time it was made for.
    func admit(appID: String, tokenVersion: String?, issuedAt: Date, now: Date = Date()) throws {
        _ = try Self.enforce(
            (cache.state(of: appID) ?? AppState()).rules, requestedVersion: nil, tokenVersion: tokenVersion, issuedAt: issuedAt, now: now)
    }

    /// The refresh hint, or the refusal. A token version that does not parse (issued before
    /// versions were bounded) counts as none: covered by every revocation.
    private static func enforce(
        _ rules: AccessRules, requestedVersion: AppVersion?, tokenVersion: String?, issuedAt: Date, now: Date
    ) throws -> Int? {
        switch rules.verdict(requestedVersion: requestedVersion, tokenVersion: tokenVersion.flatMap { AppVersion($0) }, issuedAt: issuedAt, now: now) {
        case .allowed(let refreshAfter): return refreshAfter
        case .disabled(let reason): throw DeliveryErrors.versionDisabled(reason)
        case .revoked: throw DeliveryErrors.tokenRevoked
        }
    }
}

import Foundation
import JWTKit
import Logging
import SesameConfiguration
import SesameDomain
import SesameHTTP
import SesameStorage
import SesameTokens

/// `POST /v1/auth/api-token`: a short-lived token an attested install holds for the app's own API,
/// for an audience the app's policy lists (`apiAudiences`). The install proves itself with its
/// access token, which must pass every gate delivery applies: its key not revoked, no emergency
/// revocation or kill switch covering its version.
struct APITokenIssuer: Sendable {
    let apps: AppDirectory
    let gate: InstallGate
    let tokens: TokenAuthority
    let limits: AuthLimits
    let logger: Logger

    /// How long an API token lives: long enough for a request and its retries, short enough that a
    /// stolen one is soon worthless.
    static let lifetime: Duration = .seconds(300)

    func issue(_ request: APITokenRequest, accessToken: String?) async throws -> APITokenResponse {
        guard let accessToken else { throw AuthErrors.invalidToken }
        let access: AccessTokenClaims
        do {
            access = try await tokens.verifyAccessToken(accessToken)
        } catch let error as TokenError {
            logger.info("access token refused for an API token", metadata: ["reason": "\(error.reason)"])
            throw AuthErrors.invalidToken
        }
        try limits.apiTokenPerKey.enforce(access.subject.value)
        // What a backend relies on is that a genuine app on a real device asked: App Attest, no less.
        guard access.trustTier == .attested else { throw AuthErrors.apiTokenNeedsAttestation }
        let binding = try Self.binding(request.binding)

        guard let app = try await apps.app(appID: access.appID) else { throw AuthErrors.invalidToken }
        let audience = try Self.audience(request.audience, allowed: app.policy.apiAudiences)
        guard let keyID = Base64.decode(access.subject.value) else { throw AuthErrors.invalidToken }
        do {
            try await gate.check(appID: access.appID, keyID: keyID, subject: .token(version: access.appVersion, issuedAt: access.issuedAt.value))
        } catch let refusal as InstallGate.Refusal {
            switch refusal {
            case .unknownKey: throw AuthErrors.invalidToken
            case .revokedKey, .revoked: throw AuthErrors.tokenRevoked
            case .disabled(let reason): throw APIError.versionDisabled(reason)
            }
        }

        let limitedUse = request.limitedUse ?? false
        let issued = try await tokens.issueAPIToken(
            for: access, audience: audience, binding: binding, limitedUse: limitedUse, lifetime: Self.lifetime)
        return APITokenResponse(token: issued.token, expiresIn: Int(Self.lifetime.wholeSeconds), audience: audience, limitedUse: limitedUse)
    }

    /// The audience asked for, or the app's only one; refused unless the policy lists it or it
    /// names a relay (a proof of a relay call, which only that relay accepts).
    static func audience(_ requested: String?, allowed: [String]) throws -> String {
        if let requested, APIAudience.isRelayAudience(requested) { return requested }
        guard let audience = requested ?? (allowed.count == 1 ? allowed.first : nil) else {
            if allowed.isEmpty { throw AuthErrors.audienceNotAllowed }
            throw APIError.invalidField("audience", "must name one of the app's API audiences (its policy lists \(allowed.count))")
        }
        guard allowed.contains(audience) else { throw AuthErrors.audienceNotAllowed }
        return audience
    }

    /// A binding is the base64url SHA-256 of the value the token is bound to (never the value).
    static func binding(_ text: String?) throws -> String? {
        guard let text else { return nil }
        guard text.utf8.count == 43, let bytes = Base64.decode(text), bytes.count == 32, Base64.urlEncode(bytes) == text else {
            throw APIError.invalidField("binding", "must be the base64url (no padding) SHA-256 of the value the token is bound to")
        }
        return text
    }
}

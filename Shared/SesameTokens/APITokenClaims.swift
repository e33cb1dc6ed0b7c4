import Foundation
import JWTKit
import SesameDomain

/// What an API token says: a short-lived token an attested install of the app holds for the app's
/// own API, verifiable offline by that API's backend with Sesame's JWKS and any JWT library.
///
/// A backend checks the signature (ES256, a key of the JWKS), the header `typ` (`app-api+jwt`),
/// `aud` (its own audience, from the app's policy `apiAudiences`), `exp`, `app` and `tier`; with a
/// binding, that `bnd` is the base64url SHA-256 of the value the request carries. The header `typ`,
/// the payload `typ` and `aud` each keep it from passing for a Sesame access token, and an access
/// token (`at+jwt`, `aud` `sesame-api`) from passing for one of these.
public struct APITokenClaims: JWTPayload, Equatable {
    /// The attested key id (base64url, no padding).
    public var subject: SubjectClaim
    /// `TEAMID.bundle.id`.
    public var appID: String
    /// `development` or `production`.
    public var environment: String
    /// The app version its access token was issued for, when known.
    public var appVersion: String?
    /// How the install proved itself.
    public var tier: TrustTier
    /// The API it is for.
    public var audience: AudienceClaim
    public var issuedAt: IssuedAtClaim
    public var expiration: ExpirationClaim
    /// Unique per token.
    public var id: IDClaim
    /// Always `api`.
    public var type: String
    /// The base64url SHA-256 of a value the app bound the token to (its session token, a request
    /// body), when it bound one.
    public var binding: String?
    /// True for a single-use token: its backend accepts it only after Sesame consumed its `jti`
    /// (`POST /v1/verify/consume`), which happens once. Absent otherwise.
    public var limitedUse: Bool?

    enum CodingKeys: String, CodingKey {
        case subject = "sub", appID = "app", environment = "env", appVersion = "ver", tier, audience = "aud"
        case issuedAt = "iat", expiration = "exp", id = "jti", type = "typ", binding = "bnd", limitedUse = "lu"
    }

    /// Whether the token may be used once only.
    public var isLimitedUse: Bool { limitedUse == true }

    public static let typeValue = "api"
    public static let headerType = "app-api+jwt"

    public func verify(using algorithm: some JWTAlgorithm) async throws {
        try expiration.verifyNotExpired()
        guard type == Self.typeValue else {
            throw JWTError.claimVerificationFailure(failedClaim: nil, reason: "not an API token")
        }
    }
}

import Foundation
import JWTKit
import SesameDomain

/// How Sesame's two kinds of token tell themselves apart to any verifier, Sesame's or a generic JWT
/// library reading the JWKS: the header `typ` (RFC 9068's `at+jwt` for access tokens) and the `aud`
/// claim. A verifier that checks either cannot take a refresh token for an access token.
public protocol SesameTokenClaims: JWTPayload {
    /// The header `typ` this kind of token carries.
    static var headerType: String { get }
    /// The `aud` this kind of token carries.
    static var audienceValue: String { get }
    /// Whether a token without the header `typ` is refused. Refresh tokens issued before the header
    /// existed stay usable (their payload `typ` still tells them apart for Sesame).
    static var requiresHeaderType: Bool { get }
}

/// What an access token says: which attested key (or debug token, or unattested install), of which
/// app, in which App Attest environment, at which trust tier.
/// Delivery (and the app developer's own backend) verify it offline with the JWKS; a backend must
/// check the signature, `exp`, the header `typ` (`at+jwt`), `aud` (`sesame-api`) and `app`.
public struct AccessTokenClaims: SesameTokenClaims, Equatable {
    /// The attested key id (base64url, no padding).
    public var subject: SubjectClaim
    /// `TEAMID.bundle.id`.
    public var appID: String
    /// `development` or `production`.
    public var environment: String
    /// The app version the app reported at attestation or refresh, when it did.
    public var appVersion: String?
    public var issuedAt: IssuedAtClaim
    public var expiration: ExpirationClaim
    public var id: IDClaim
    /// Always `access`, so a refresh token can never pass as an access token.
    public var type: String
    /// Always `sesame-api`.
    public var audience: AudienceClaim
    /// How the install proved itself; absent from tokens issued before tiers existed, which were
    /// all attested.
    public var tier: TrustTier?

    enum CodingKeys: String, CodingKey {
        case subject = "sub", appID = "app", environment = "env", appVersion = "ver"
        case issuedAt = "iat", expiration = "exp", id = "jti", type = "typ", audience = "aud", tier
    }

    /// The tier the bearer is served at.
    public var trustTier: TrustTier { tier ?? .attested }

    public static let typeValue = "access"
    public static let headerType = "at+jwt"
    public static let audienceValue = "sesame-api"
    public static let requiresHeaderType = true

    public func verify(using algorithm: some JWTAlgorithm) async throws {
        try expiration.verifyNotExpired()
        try audience.verifyIntendedAudience(includes: Self.audienceValue)
        guard type == Self.typeValue else {
            throw JWTError.claimVerificationFailure(failedClaim: nil, reason: "not an access token")
        }
    }
}

/// What a refresh token says: the access token's facts plus its place in a refresh-token family.
/// A family's current generation lives in PostgreSQL; an older generation presented again is theft.
public struct RefreshTokenClaims: SesameTokenClaims, Equatable {
    public var subject: SubjectClaim
    public var appID: String
    public var environment: String
    public var appVersion: String?
    /// The family's id (UUID).
    public var family: String
    /// The generation within the family; each refresh increments it.
    public var generation: Int64
    public var issuedAt: IssuedAtClaim
    public var expiration: ExpirationClaim
    public var id: IDClaim
    /// Always `refresh`.
    public var type: String
    /// `sesame-refresh` (absent from refresh tokens issued before it existed).
    public var audience: AudienceClaim?

    enum CodingKeys: String, CodingKey {
        case subject = "sub", appID = "app", environment = "env", appVersion = "ver", family = "fam", generation = "gen"
        case issuedAt = "iat", expiration = "exp", id = "jti", type = "typ", audience = "aud"
    }

    public static let typeValue = "refresh"
    public static let headerType = "refresh+jwt"
    public static let audienceValue = "sesame-refresh"
    public static let requiresHeaderType = false

    public func verify(using algorithm: some JWTAlgorithm) async throws {
        try expiration.verifyNotExpired()
        try audience?.verifyIntendedAudience(includes: Self.audienceValue)
        guard type == Self.typeValue else {
            throw JWTError.claimVerificationFailure(failedClaim: nil, reason: "not a refresh token")
        }
    }
}

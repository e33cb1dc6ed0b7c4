import Foundation
import JWTKit

/// What an access token says: which attested key, of which app, in which App Attest environment.
/// Delivery (and the app developer's own backend) verify it offline with the JWKS.
public struct AccessTokenClaims: JWTPayload, Equatable {
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

    enum CodingKeys: String, CodingKey {
        case subject = "sub", appID = "app", environment = "env", appVersion = "ver"
        case issuedAt = "iat", expiration = "exp", id = "jti", type = "typ"
    }

    public static let typeValue = "access"

    public func verify(using algorithm: some JWTAlgorithm) async throws {
        try expiration.verifyNotExpired()
        guard type == Self.typeValue else {
            throw JWTError.claimVerificationFailure(failedClaim: nil, reason: "not an access token")
        }
    }
}

/// What a refresh token says: the access token's facts plus its place in a refresh-token family.
/// A family's current generation lives in PostgreSQL; an older generation presented again is theft.
public struct RefreshTokenClaims: JWTPayload, Equatable {
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

    enum CodingKeys: String, CodingKey {
        case subject = "sub", appID = "app", environment = "env", appVersion = "ver", family = "fam", generation = "gen"
        case issuedAt = "iat", expiration = "exp", id = "jti", type = "typ"
    }

    public static let typeValue = "refresh"

    public func verify(using algorithm: some JWTAlgorithm) async throws {
        try expiration.verifyNotExpired()
        guard type == Self.typeValue else {
            throw JWTError.claimVerificationFailure(failedClaim: nil, reason: "not a refresh token")
        }
    }
}

extension Duration {
    /// The duration in whole seconds, as PostgreSQL intervals and JWT claims use them.
    var wholeSeconds: Int64 { components.seconds }
}

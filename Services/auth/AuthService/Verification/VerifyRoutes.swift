import Foundation
import JWTKit
import Hummingbird
import Logging
import SesameDomain
import SesameHTTP
import SesameStorage
import SesameTokens

/// Under `v1/verify`, for the app's own backend, authenticated by a backend key:
/// `POST consume` redeems a single-use API token once.
struct VerifyRoutes {
    let backendKeys: BackendKeyStore
    let consumed: ConsumedAPITokens
    let tokens: TokenAuthority
    let limits: AuthLimits
    let logger: Logger

    /// `POST /v1/verify/consume`.
    struct ConsumeRequest: Decodable {
        /// The single-use API token the app sent.
        let token: String
        /// The backend's own audience: when given, a token for another one is refused.
        let audience: String?
    }

    /// What a consumed token says, for the backend to decide on.
    struct ConsumeResponse: ResponseEncodable {
        let app: String
        /// The attested key id.
        let sub: String
        let tier: TrustTier
        let env: String
        let ver: String?
        let aud: String
        /// Base64url SHA-256 of the value the app bound the token to, if any.
        let bnd: String?
        let jti: String
        /// Seconds since 1970.
        let iat: Int
        let exp: Int
    }

    func addRoutes(to group: RouterGroup<SesameRequestContext>) {
        group.post("consume") { request, context -> ConsumeResponse in
            let key = try await backendKey(of: request)
            try limits.consumePerBackendKey.enforce(key.keyID.uuidString)
            let body = try await request.decode(as: ConsumeRequest.self, context: context)
            return try await consume(body, appID: key.appID)
        }
    }

    private func backendKey(of request: Request) async throws -> (keyID: UUID, appID: String) {
        guard let credential = request.bearerCredential, let key = try await backendKeys.authenticate(credential) else {
            throw AuthErrors.invalidBackendKey
        }
        return key
    }

    func consume(_ body: ConsumeRequest, appID: String) async throws -> ConsumeResponse {
        let claims: APITokenClaims
        do {
            claims = try await tokens.verifyAPIToken(body.token)
        } catch let error as TokenError {
            logger.info("API token refused at consume", metadata: ["reason": "\(error.reason)"])
            throw AuthErrors.apiTokenInvalid
        }
        guard claims.appID == appID else { throw AuthErrors.wrongApp }
        if let audience = body.audience, audience != claims.audience.value.first { throw AuthErrors.audienceMismatch }
        guard claims.isLimitedUse else { throw AuthErrors.notSingleUse }
        guard try await consumed.consume(tokenID: claims.id.value, appID: claims.appID, expiresAt: claims.expiration.value) else {
            throw AuthErrors.alreadyConsumed
        }
        return ConsumeResponse(
            app: claims.appID, sub: claims.subject.value, tier: claims.tier, env: claims.environment, ver: claims.appVersion,
            aud: claims.audience.value.first ?? "", bnd: claims.binding, jti: claims.id.value,
            iat: Int(claims.issuedAt.value.timeIntervalSince1970), exp: Int(claims.expiration.value.timeIntervalSince1970))
    }
}

import HTTPTypes
import SesameDomain
import SesameHTTP

/// Every refusal delivery answers with.
enum DeliveryErrors {
    static let missingToken = APIError.invalidToken("Send the access token from /v1/auth/attest as 'Authorization: Bearer …'.")
    static let invalidToken = APIError.invalidToken("The access token is invalid or expired; refresh it or attest again.")
    static let tokenRevoked = APIError.tokenRevoked("This app version's tokens were revoked; attest again with a new key.")
    static let deviceRevoked = APIError.tokenRevoked("This install's App Attest key was revoked; attest again with a new key.")
    static let debugTokenRevoked = APIError.tokenRevoked("The debug token this access token was exchanged for was revoked.")
    static func tierNoLongerAdmitted(_ tier: TrustTier) -> APIError {
        APIError.tokenRevoked("This app's policy no longer admits \(tier.rawValue) tokens.")
    }
    static let appUnavailable = APIError(
        .serviceUnavailable, code: DeliveryErrorCode.appUnavailable, message: "This app's configuration cannot be loaded right now; try again later.",
        headers: [.retryAfter: "30"])
    static let invalidVersion = APIError(
        .badRequest, code: DeliveryErrorCode.invalidVersion, message: "\"version\" must be the app version: N, N.N or N.N.N with whole numbers.")
    static func noConfig(_ version: String) -> APIError {
        APIError(.notFound, code: DeliveryErrorCode.noConfig, message: "No config is published for version \(version).")
    }
    static let scopeUnavailable = APIError(
        .badRequest, code: DeliveryErrorCode.scopeUnavailableZeroKnowledge,
        message: "This config is zero-knowledge: Sesame cannot read it, so it is only served whole. Drop the scope parameter.")
    /// `what` needs tier `required`, above the caller's.
    static func tierInsufficient(_ what: String, required: TrustTier) -> APIError {
        APIError(
            .forbidden, code: DeliveryErrorCode.tierInsufficient,
            message: "\(what) served only to tokens of tier '\(required.rawValue)' or above; this token's tier is lower.")
    }
    static let invalidScope = APIError(
        .badRequest, code: DeliveryErrorCode.invalidScope, message: "\"scope\" is a comma-separated list of dot paths such as api_keys.stripe,features.")
}

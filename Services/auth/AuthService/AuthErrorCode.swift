import SesameHTTP

/// The error codes only auth answers, each raised where its `APIError` is made. With
/// `CommonErrorCode` and `AccessTokenErrorCode` they are exactly the `Error.code` enum of
/// `Services/auth/openapi.yaml`, which says what each means (`OpenAPIContractTests` holds both ways).
public enum AuthErrorCode: String, ErrorCodes {
    case alreadyConsumed = "already_consumed"
    case assertionInvalid = "assertion_invalid"
    case assertionRequired = "assertion_required"
    case attestationInvalid = "attestation_invalid"
    case audienceMismatch = "audience_mismatch"
    case audienceNotAllowed = "audience_not_allowed"
    case audienceRequired = "audience_required"
    case debugTokenExpired = "debug_token_expired"
    case debugTokenInvalid = "debug_token_invalid"
    case debugTokenRevoked = "debug_token_revoked"
    case debugTokensNotAllowed = "debug_tokens_not_allowed"
    case deviceBanned = "device_banned"
    case deviceCheckRequired = "device_check_required"
    case deviceRevoked = "device_revoked"
    case deviceTokenInvalid = "device_token_invalid"
    case deviceTokenReused = "device_token_reused"
    case environmentNotAllowed = "environment_not_allowed"
    case invalidBackendKey = "invalid_backend_key"
    case invalidChallenge = "invalid_challenge"
    case keyAlreadyAttested = "key_already_attested"
    case keyNotFound = "key_not_found"
    case notSingleUse = "not_single_use"
    case refreshTokenReused = "refresh_token_reused"
    case riskTooHigh = "risk_too_high"
    case tierNotAllowed = "tier_not_allowed"
    case unattestedNotAdmitted = "unattested_not_admitted"
    case unknownApp = "unknown_app"
    case wrongApp = "wrong_app"
}

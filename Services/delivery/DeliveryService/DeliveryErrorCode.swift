import SesameHTTP

/// The error codes only delivery answers, each raised where its `APIError` is made. With
/// `CommonErrorCode` and `AccessTokenErrorCode` they are exactly the `Error.code` enum of
/// `Services/delivery/openapi.yaml`, which says what each means (`OpenAPIContractTests` holds both ways).
public enum DeliveryErrorCode: String, ErrorCodes {
    case appUnavailable = "app_unavailable"
    case blobNotFound = "blob_not_found"
    case identityInvalid = "identity_invalid"
    case identityIssuerUnavailable = "identity_issuer_unavailable"
    case identityNotConfigured = "identity_not_configured"
    case identityRequired = "identity_required"
    case invalidLink = "invalid_link"
    case invalidScope = "invalid_scope"
    case invalidVersion = "invalid_version"
    case noConfig = "no_config"
    case noPins = "no_pins"
    case noUserData = "no_user_data"
    case relayBusy = "relay_busy"
    case relayMethodNotAllowed = "relay_method_not_allowed"
    case relayNotFound = "relay_not_found"
    case relayPathNotAllowed = "relay_path_not_allowed"
    case relayProofInvalid = "relay_proof_invalid"
    case relayProofRequired = "relay_proof_required"
    case relayQuotaExceeded = "relay_quota_exceeded"
    case relayRequestTimeout = "relay_request_timeout"
    case relayRequestTooLarge = "relay_request_too_large"
    case relayResponseTooLarge = "relay_response_too_large"
    case relayUpstreamFailed = "relay_upstream_failed"
    case relayUpstreamTimeout = "relay_upstream_timeout"
    case relayUnusable = "relay_unusable"
    case scopeUnavailableZeroKnowledge = "scope_unavailable_zero_knowledge"
    case tierInsufficient = "tier_insufficient"
    case tooManyStreams = "too_many_streams"
    case userQuotaExceeded = "user_quota_exceeded"
    case versionConflict = "version_conflict"
}

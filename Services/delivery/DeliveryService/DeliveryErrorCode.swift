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
    case scopeUnavailableZeroKnowledge = "scope_unavailable_zero_knowledge"
    case tierInsufficient = "tier_insufficient"
    case tooManyStreams = "too_many_streams"
    case userQuotaExceeded = "user_quota_exceeded"
    case versionConflict = "version_conflict"
}

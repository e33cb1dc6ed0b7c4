/// A service's error codes: stable snake_case strings clients switch on, declared once as the cases
/// of an enum. Each service has its own (`AuthErrorCode`, `DeliveryErrorCode`, `AdminErrorCode`),
/// and shares `CommonErrorCode` (and, where it checks access tokens, `AccessTokenErrorCode`);
/// together they are exactly its OpenAPI document's `Error.code` enum (`OpenAPIContractTests`).
public protocol ErrorCodes: RawRepresentable<String>, CaseIterable, Sendable {}

extension ErrorCodes {
    /// Every code of the set, as clients see them.
    public static var codes: [String] { allCases.map(\.rawValue) }

    /// Every case's name in Swift (`unknownApp`), for the check that each is raised somewhere.
    public static var caseNames: [String] { allCases.map { String(describing: $0) } }
}

/// Codes the HTTP layer answers for every service: routing, bodies, limits and failures.
public enum CommonErrorCode: String, ErrorCodes {
    case badRequest = "bad_request"
    case internalError = "internal_error"
    case invalidBody = "invalid_body"
    case invalidRequest = "invalid_request"
    case methodNotAllowed = "method_not_allowed"
    case notFound = "not_found"
    case payloadTooLarge = "payload_too_large"
    case rateLimited = "rate_limited"
    case serviceUnavailable = "service_unavailable"
    case unsupportedMediaType = "unsupported_media_type"
}

/// Codes of an access token's checks, which auth and delivery both make.
public enum AccessTokenErrorCode: String, ErrorCodes {
    case invalidToken = "invalid_token"
    case tokenRevoked = "token_revoked"
    case versionDisabled = "version_disabled"
}

import HTTPTypes
import SesameDomain

/// The refusals every service answers with the same code and status: one home each, so a client
/// can switch on the code whichever service refused it. The message says what to do there.
extension APIError {
    /// 400 `invalid_request`: the request is malformed; `message` says how.
    public static func invalidRequest(_ message: String) -> APIError {
        APIError(.badRequest, code: CommonErrorCode.invalidRequest, message: message)
    }

    /// 400 `invalid_request` about one field: `"field" problem.`
    public static func invalidField(_ field: String, _ problem: String) -> APIError {
        invalidRequest("\"\(field)\" \(problem).")
    }

    /// 401 `invalid_token`: no token, or one that is malformed, forged or expired.
    public static func invalidToken(_ message: String) -> APIError {
        APIError(.unauthorized, code: AccessTokenErrorCode.invalidToken, message: message)
    }

    /// 403 `version_disabled`: a kill switch covers the app's version; the message is the admin's reason.
    public static func versionDisabled(_ reason: String) -> APIError {
        APIError(.forbidden, code: AccessTokenErrorCode.versionDisabled, message: reason)
    }

    /// 401 `token_revoked`: a token that was valid has been revoked; the app attests again.
    public static func tokenRevoked(_ message: String) -> APIError {
        APIError(.unauthorized, code: AccessTokenErrorCode.tokenRevoked, message: message)
    }

    /// The bytes of base64 (or base64url) request field `field`, refused with a 400 naming it when
    /// it is not base64, is empty, or is longer than `maxCharacters` (which keeps hostile input cheap).
    public static func decodeBase64(_ text: String, field: String, maxCharacters: Int) throws(APIError) -> [UInt8] {
        guard text.utf8.count <= maxCharacters, let bytes = Base64.decode(text), !bytes.isEmpty else {
            throw invalidField(field, "is not base64")
        }
        return bytes
    }
}

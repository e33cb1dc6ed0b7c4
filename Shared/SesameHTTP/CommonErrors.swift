import HTTPTypes

/// The refusals every service answers with the same code and status: one home each, so a client
/// can switch on the code whichever service refused it. The message says what to do there.
extension APIError {
    /// 400 `invalid_request`: the request is malformed; `message` says how.
    public static func invalidRequest(_ message: String) -> APIError {
        APIError(.badRequest, code: "invalid_request", message: message)
    }

    /// 400 `invalid_request` about one field: `"field" problem.`
    public static func invalidField(_ field: String, _ problem: String) -> APIError {
        invalidRequest("\"\(field)\" \(problem).")
    }

    /// 401 `invalid_token`: no token, or one that is malformed, forged or expired.
    public static func invalidToken(_ message: String) -> APIError {
        APIError(.unauthorized, code: "invalid_token", message: message)
    }

    /// 401 `token_revoked`: a token that was valid has been revoked; the app attests again.
    public static func tokenRevoked(_ message: String) -> APIError {
        APIError(.unauthorized, code: "token_revoked", message: message)
    }
}

import HTTPTypes

/// Header names Sesame adds beyond the standard ones.
public enum SesameHeaders {
    /// The request id, also in every log line of the request as `hb.request.id`.
    public static let requestID = HTTPField.Name("X-Request-Id")!
    /// The user's ID token from the app's identity issuer, proving who the user is (per-user data).
    public static let identityToken = HTTPField.Name("X-Sesame-Identity-Token")!
    /// The user's id, unproven, for apps whose policy opts into `userIdentity: unverified`.
    public static let userID = HTTPField.Name("X-Sesame-User-Id")!
    /// The app a dashboard session acts on (`TEAMID.bundle.id`).
    public static let app = HTTPField.Name("X-Sesame-App")!
    /// The dashboard session's CSRF token, on every change it makes.
    public static let csrfToken = HTTPField.Name("X-CSRF-Token")!
}

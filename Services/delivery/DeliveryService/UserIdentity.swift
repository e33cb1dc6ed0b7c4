import Hummingbird
import SesameDomain
import SesameHTTP
import SesameTokens

/// Who the user of a per-user data request is, as the app's policy requires it to be shown.
/// App Attest proves the app, never the user: by default the request must carry an ID token from
/// the issuer the policy names, and the document is keyed by its verified `sub`.
struct UserIdentity: Sendable {
    let keys: IdentityKeyCache

    /// The key the user's document is stored under. Verified users and unverified ids live in
    /// separate namespaces (a control character no header value can hold separates them), so an
    /// app switching modes cannot let a claimed id reach a verified user's document.
    func userKey(of request: Request, appID: String, policy: AppPolicy) async throws -> String {
        if request.uri.queryParameters.get("user_id") != nil {
            throw APIError.invalidRequest("User ids never travel in the URL (it reaches access logs): send an ID token as X-Sesame-Identity-Token.")
        }
        switch policy.userIdentity {
        case .unverified:
            guard let userID = request.headers[SesameHeaders.userID], (1...256).contains(userID.utf8.count) else {
                throw APIError.invalidRequest("Send the user id (1 to 256 characters) as X-Sesame-User-Id.")
            }
            return userID
        case .verified:
            guard let issuer = policy.identityIssuer else {
                throw APIError(
                    .forbidden, code: DeliveryErrorCode.identityNotConfigured,
                    message: "This app's policy names no identity issuer: set identityIssuer with PUT /v1/admin/policy.")
            }
            guard let token = request.headers[SesameHeaders.identityToken], !token.isEmpty else {
                throw APIError(
                    .unauthorized, code: DeliveryErrorCode.identityRequired,
                    message: "Send the signed-in user's ID token from \(issuer.issuer) as X-Sesame-Identity-Token.")
            }
            let subject: String
            do {
                subject = try await keys.subject(of: token, issuer: issuer, appID: appID)
            } catch is IdentityKeyCache.IssuerUnavailable {
                throw APIError(
                    .serviceUnavailable, code: DeliveryErrorCode.identityIssuerUnavailable,
                    message: "The keys of \(issuer.issuer) cannot be fetched right now, so the ID token cannot be checked; try again later.",
                    headers: [.retryAfter: "30"])
            } catch {
                throw APIError(
                    .unauthorized, code: DeliveryErrorCode.identityInvalid,
                    message: "The ID token is not valid for this app (signature, iss, aud or expiry); sign the user in again.")
            }
            return "\u{1}\(issuer.issuer)\u{0}\(subject)"
        }
    }
}

import Crypto
import Foundation
import SesameDomain

/// Signed, expiring links to an app's blobs: `HMAC-SHA256(linkKey, app ‖ blob key ‖ expiry ‖
/// token version ‖ token issue time ‖ token subject ‖ tier)`, so a link works for that blob of
/// that app until it expires, any edit breaks it, and whatever would refuse the token it was made
/// for now (a kill switch, a revocation of its version or of its install, a tier closed or raised
/// above it) refuses the link too.
struct BlobLinks: Sendable {
    let key: SymmetricKey
    static let lifetime: TimeInterval = 300

    /// What a link grants, and for whom it was made.
    struct Grant: Sendable, Equatable {
        let appID: String
        let blobKey: String
        /// Unix seconds.
        let expires: Int64
        /// The `ver` of the access token the link was made for, if it had one.
        let tokenVersion: String?
        /// The `iat` of that token, Unix seconds, exactly as the token has it (fractional: a token
        /// issued in the same second as a revocation but after it must stay usable).
        let tokenIssuedAt: Double
        /// The token's `sub`: the install's key id (or `debug:…`), checked against revocations.
        let subject: String
        /// The token's tier, checked against the app's policy at download.
        let tier: TrustTier
    }

    func signature(_ grant: Grant) -> String {
        let fields = [
            grant.appID, grant.blobKey, String(grant.expires), grant.tokenVersion ?? "", String(grant.tokenIssuedAt), grant.subject,
            grant.tier.rawValue,
        ]
        let message = Data(fields.joined(separator: "\u{0}").utf8)
        return Base64.urlEncode(HMAC<SHA256>.authenticationCode(for: message, using: key))
    }

    /// The path and query of a link valid until `now + lifetime`, for the bearer of a token with
    /// these claims.
    func link(appID: String, blobKey: String, tokenVersion: String?, tokenIssuedAt: Date, subject: String, tier: TrustTier, now: Date = Date())
        -> String
    {
        let grant = Grant(
            appID: appID, blobKey: blobKey, expires: Int64(now.timeIntervalSince1970 + Self.lifetime), tokenVersion: tokenVersion,
            tokenIssuedAt: tokenIssuedAt.timeIntervalSince1970, subject: subject, tier: tier)
        let unreserved = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: ".-_"))
        let app = appID.addingPercentEncoding(withAllowedCharacters: unreserved) ?? appID
        let sub = subject.addingPercentEncoding(withAllowedCharacters: unreserved) ?? subject
        var query = "app=\(app)&expires=\(grant.expires)&iat=\(grant.tokenIssuedAt)&sub=\(sub)&tier=\(tier.rawValue)"
        if let tokenVersion { query += "&ver=\(tokenVersion)" }
        return "/v1/blob/\(blobKey)/content?\(query)&sig=\(signature(grant))"
    }

    /// Whether a presented link is genuine and unexpired.
    func isValid(_ grant: Grant, signature presented: String, now: Date = Date()) -> Bool {
        guard Double(grant.expires) > now.timeIntervalSince1970 else { return false }
        let expected = signature(grant)
        return ConstantTime.equals(expected.utf8, presented.utf8)
    }
}

import Crypto
import Foundation

/// Signed, expiring links to an app's blobs: `HMAC-SHA256(linkKey, app ‖ blob key ‖ expiry)`, so a
/// link works for that blob of that app until it expires, and any edit breaks it.
struct BlobLinks: Sendable {
    let key: SymmetricKey
    static let lifetime: TimeInterval = 300

    func signature(appID: String, blobKey: String, expires: Int64) -> String {
        let message = Data("\(appID)\u{0}\(blobKey)\u{0}\(expires)".utf8)
        return Data(HMAC<SHA256>.authenticationCode(for: message, using: key)).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// The path and query of a link valid until `now + lifetime`.
    func link(appID: String, blobKey: String, now: Date = Date()) -> String {
        let expires = Int64(now.timeIntervalSince1970 + Self.lifetime)
        let app = appID.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: ".-_"))) ?? appID
        return "/v1/blob/\(blobKey)/content?app=\(app)&expires=\(expires)&sig=\(signature(appID: appID, blobKey: blobKey, expires: expires))"
    }

    /// Whether a presented link is genuine and unexpired.
    func isValid(appID: String, blobKey: String, expires: Int64, signature presented: String, now: Date = Date()) -> Bool {
        guard Double(expires) > now.timeIntervalSince1970 else { return false }
        let expected = signature(appID: appID, blobKey: blobKey, expires: expires)
        guard expected.utf8.count == presented.utf8.count else { return false }
        return zip(expected.utf8, presented.utf8).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}

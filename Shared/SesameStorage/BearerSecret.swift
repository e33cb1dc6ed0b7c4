import Crypto
import Foundation
import SesameDomain

/// The secrets Sesame hands out once and keeps only a hash of (provisioning keys, debug tokens,
/// invitation links, dashboard sessions): 32 random bytes, base64url, and their SHA-256 for the
/// database, so a database reader holds nothing usable.
public enum BearerSecret {
    /// A new secret: `prefix` and 43 base64url characters.
    public static func generate(prefix: String = "") -> String {
        prefix + Base64.urlEncode((0..<32).map { _ in UInt8.random(in: 0...255) })
    }

    /// What is stored for `secret`.
    public static func hash(_ secret: String) -> Data { Data(SHA256.hash(data: Data(secret.utf8))) }
}

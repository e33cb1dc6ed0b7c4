import Crypto
import Foundation

/// The app's own sign-in backend, as the walk plays it: a P-256 key that signs ES256 ID tokens,
/// whose public key the app's policy names.
struct IdentityIssuer: Sendable {
    let issuer = "https://id.e2e.example"
    let audience: String
    private let key = P256.Signing.PrivateKey()

    var publicKeyPEM: String { key.publicKey.pemRepresentation }

    /// The policy that trusts this issuer.
    var policy: [String: Any] {
        ["identityIssuer": ["issuer": issuer, "audiences": [audience], "publicKeysPEM": publicKeyPEM]]
    }

    /// A signed ID token for `subject`, valid for ten minutes.
    func token(subject: String) throws -> String {
        let header = try JSONSerialization.data(withJSONObject: ["alg": "ES256", "typ": "JWT"])
        let claims = try JSONSerialization.data(withJSONObject: [
            "iss": issuer, "aud": audience, "sub": subject, "exp": Int(Date().timeIntervalSince1970) + 600,
        ])
        let signingInput = Self.base64URL(header) + "." + Self.base64URL(claims)
        let signature = try key.signature(for: Data(signingInput.utf8)).rawRepresentation
        return signingInput + "." + Self.base64URL(signature)
    }

    private static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

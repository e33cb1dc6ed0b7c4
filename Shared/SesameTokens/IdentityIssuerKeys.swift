import Foundation
import JWTKit
import SesameDomain

/// What Sesame reads from an identity provider's ID token (Sign in with Apple, or the app's own
/// backend): who the user is (`sub`), for whom and by whom the token was made, and until when.
public struct IdentityTokenClaims: JWTPayload {
    public var issuer: IssuerClaim
    public var subject: SubjectClaim
    public var audience: AudienceClaim
    public var expiration: ExpirationClaim
    public var notBefore: NotBeforeClaim?

    enum CodingKeys: String, CodingKey {
        case issuer = "iss", subject = "sub", audience = "aud", expiration = "exp", notBefore = "nbf"
    }

    public func verify(using algorithm: some JWTAlgorithm) async throws {
        try expiration.verifyNotExpired()
        try notBefore?.verifyNotBefore()
    }
}

/// The keys one identity issuer signs ID tokens with, from its JWKS or from PEM public keys
/// (ES256 or RS256), and the check of a token against the issuer's `iss` and `aud`.
public struct IdentityIssuerKeys: Sendable {
    /// One collection per PEM key (they carry no `kid`), or one for a whole JWKS.
    private let collections: [JWTKeyCollection]

    /// Why an ID token was refused, for logs (never the token itself).
    public struct Refusal: Error, Sendable, CustomStringConvertible {
        public let description: String

        public init(description: String) {
            self.description = description
        }
    }

    /// The keys of a JSON Web Key Set document.
    public init(jwksJSON: String) async throws {
        collections = [try await JWTKeyCollection().add(jwksJSON: jwksJSON)]
    }

    /// The keys of a PEM bundle of public keys (P-256 or RSA); at least one, at most 8.
    public init(pem: String) async throws {
        let blocks = pem.components(separatedBy: "-----END PUBLIC KEY-----").filter { $0.contains("-----BEGIN PUBLIC KEY-----") }
        guard (1...8).contains(blocks.count) else {
            throw Refusal(description: "the PEM must hold 1 to 8 'BEGIN PUBLIC KEY' blocks")
        }
        var collections: [JWTKeyCollection] = []
        for block in blocks {
            let text = block + "-----END PUBLIC KEY-----"
            if let ecdsa = try? ES256PublicKey(pem: text) {
                collections.append(await JWTKeyCollection().add(ecdsa: ecdsa))
            } else if let rsa = try? Insecure.RSA.PublicKey(pem: text) {
                collections.append(await JWTKeyCollection().add(rsa: rsa, digestAlgorithm: .sha256))
            } else {
                throw Refusal(description: "a PEM block is neither a P-256 nor an RSA public key")
            }
        }
        self.collections = collections
    }

    /// The verified `sub` of `token`: signed by one of these keys, unexpired, issued by
    /// `issuer.issuer` for one of `issuer.audiences`.
    public func subject(of token: String, issuer: IdentityIssuer) async throws(Refusal) -> String {
        guard token.utf8.count <= 8192 else { throw Refusal(description: "the ID token is too long") }
        var claims: IdentityTokenClaims?
        for collection in collections {
            if let verified = try? await collection.verify(token, as: IdentityTokenClaims.self) {
                claims = verified
                break
            }
        }
        guard let claims else { throw Refusal(description: "the ID token's signature or lifetime does not verify") }
        guard claims.issuer.value == issuer.issuer else { throw Refusal(description: "the ID token's iss is not the configured issuer") }
        guard claims.audience.value.contains(where: issuer.audiences.contains) else {
            throw Refusal(description: "the ID token's aud names none of the configured audiences")
        }
        guard !claims.subject.value.isEmpty, claims.subject.value.utf8.count <= 512 else {
            throw Refusal(description: "the ID token's sub is empty or too long")
        }
        return claims.subject.value
    }
}

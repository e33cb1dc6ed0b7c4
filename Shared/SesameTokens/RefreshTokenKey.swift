import Crypto
import Foundation

/// The key that authenticates refresh tokens (HS256) made under a signing key.
///
/// Refresh tokens are read by auth alone (delivery and apps' backends verify access and API tokens
/// with the JWKS), so they need no public-key signature: an HMAC costs about a microsecond, a P-256
/// signature and its verification about a hundred together. The key is derived from the signing
/// key's private part, so it lives and dies with that key: a rotation moves refresh tokens to the
/// new key, a revocation (the key no longer verifies) refuses every refresh token made under it,
/// and nothing new is stored. Auth alone can open the private part; the derived key never leaves
/// it.
enum RefreshTokenKey {
    /// What the derivation is for, so the key equals no other key made from the same secret.
    private static let purpose = Data("sesame refresh tokens HS256".utf8)

    /// The HS256 key for refresh tokens under the signing key `kid` whose private part is `privateKey`.
    static func derive(from privateKey: P256.Signing.PrivateKey, kid: String) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: privateKey.rawRepresentation), salt: Data(kid.utf8), info: purpose,
            outputByteCount: 32)
    }
}

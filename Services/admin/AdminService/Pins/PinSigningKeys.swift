import Foundation
import CryptoExtras

/// RSA keys for pin registries, generated on a thread of their own: a 4096-bit key takes seconds,
/// which must not hold the cooperative pool.
enum PinSigningKeys {
    /// The sizes the SslPinning client accepts that are still worth making.
    static let allowedBits = [2048, 4096]

    static func generate(bits: Int) async throws -> _RSA.Signing.PrivateKey {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result { try _RSA.Signing.PrivateKey(keySize: bits == 4096 ? .bits4096 : .bits2048) })
            }
        }
    }

    /// The public key as the SslPinning SDK takes it: base64 of the PEM, on one line.
    static func singleLineBase64(_ key: _RSA.Signing.PublicKey) -> String {
        Data(key.pemRepresentation.utf8).base64EncodedString()
    }
}

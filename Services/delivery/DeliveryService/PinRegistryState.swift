import Crypto
import CryptoExtras
import Foundation
import SesameDomain
import SesamePinning

/// An app's pin registry as delivery serves it: signed once per load with the app's key (RSA
/// PKCS#1 v1.5 signatures are deterministic, so an unchanged registry keeps its bytes and ETag).
struct ServedPinRegistry: Sendable {
    /// Every pin, expired ones included: a pin that expires between loads is dropped at serve time.
    let pins: [Pin]
    let signingKey: _RSA.Signing.PrivateKey
    /// The signed document of the pins live at `signedAt`.
    let document: [UInt8]
    let etag: String
    /// When the first pin in `document` expires (Unix seconds): from then the document is signed
    /// again without it.
    let nextExpiry: Int64?

    init(pins: [Pin], signingKey: _RSA.Signing.PrivateKey, now: Date = Date()) throws {
        self.pins = pins
        self.signingKey = signingKey
        let live = pins.filter { !$0.isExpired(at: now) }
        document = try PinRegistry(keys: live).signedDocument(with: signingKey)
        etag = "\"" + Hex.encode(SHA256.hash(data: document).prefix(16)) + "\""
        nextExpiry = live.compactMap(\.expire).min()
    }

    /// The registry to serve at `now`: this one, or, once one of its pins has expired, one signed again without it.
    func current(at now: Date) throws -> ServedPinRegistry {
        guard let nextExpiry, Double(nextExpiry) <= now.timeIntervalSince1970 else { return self }
        return try ServedPinRegistry(pins: pins, signingKey: signingKey, now: now)
    }
}

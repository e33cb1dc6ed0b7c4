import Crypto
import CryptoExtras
import Foundation
import SesameDomain
import SesamePinning
import Synchronization

/// An app's pin registry as delivery serves it: signed once per load with the app's key (RSA
/// PKCS#1 v1.5 signatures are deterministic, so an unchanged registry keeps its bytes and ETag),
/// and once more when a pin in it expires, for every request until the next load. It carries the
/// app's pin sequence, so an app can refuse an older registry replayed to it.
final class ServedPinRegistry: Sendable {
    /// The signed bytes of the pins live when they were signed.
    struct Document: Sendable {
        let bytes: [UInt8]
        let etag: String
        /// When its first pin expires (Unix seconds): from then it is signed again without it.
        let nextExpiry: Int64?

        init(pins: [PinRegistry.Pin], signingKey: _RSA.Signing.PrivateKey, sequence: Int64, now: Date) throws {
            let live = pins.filter { !$0.isExpired(at: now) }
            bytes = try PinRegistry(keys: live, sequence: sequence).signedDocument(with: signingKey)
            etag = "\"" + Hex.encode(SHA256.hash(data: bytes).prefix(16)) + "\""
            nextExpiry = live.compactMap(\.expire).min()
        }
    }

    /// Every pin, expired ones included.
    private let pins: [PinRegistry.Pin]
    private let signingKey: _RSA.Signing.PrivateKey
    /// The app's pin sequence when loaded.
    private let sequence: Int64
    private let document: Mutex<Document>

    init(pins: [PinRegistry.Pin], signingKey: _RSA.Signing.PrivateKey, sequence: Int64, now: Date = Date()) throws {
        self.pins = pins
        self.signingKey = signingKey
        self.sequence = sequence
        document = Mutex(try Document(pins: pins, signingKey: signingKey, sequence: sequence, now: now))
    }

    /// The document to serve at `now`, signed again (once) after one of its pins has expired.
    func current(at now: Date) throws -> Document {
        try document.withLock { document in
            if let nextExpiry = document.nextExpiry, Double(nextExpiry) <= now.timeIntervalSince1970 {
                document = try Document(pins: pins, signingKey: signingKey, sequence: sequence, now: now)
            }
            return document
        }
    }
}

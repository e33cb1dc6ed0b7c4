import Crypto
import Foundation
import SesameDomain

/// The master keys that wrap data keys: one current key for new data, older ones for reading.
///
/// Every key has a short, stable id derived from the key itself, written into each ciphertext, so
/// a ciphertext names the master key that can open it and rotation needs no extra bookkeeping.
public struct MasterKeyring: Sendable {
    /// A master key's identifier: the first 8 bytes of a domain-separated SHA-256 of the key.
    public struct KeyID: Hashable, Sendable, CustomStringConvertible {
        /// The raw identifier bytes.
        public let bytes: [UInt8]

        /// The id of `key`.
        public init(of key: SymmetricKey) {
            var hasher = SHA256()
            hasher.update(data: Array("sesame.master-key-id.v1".utf8))
            key.withUnsafeBytes { hasher.update(bufferPointer: $0) }
            bytes = Array(hasher.finalize().prefix(KeyID.length))
        }

        init(bytes: [UInt8]) { self.bytes = bytes }

        /// How many bytes an id takes in a ciphertext.
        public static let length = 8

        public var description: String { Hex.encode(bytes) }
    }

    /// The id of the key new ciphertexts are wrapped under.
    public let currentID: KeyID
    private let keys: [KeyID: SymmetricKey]

    /// Creates a keyring; `previous` keys only unwrap. Every key must be 32 bytes.
    public init(current: SymmetricKey, previous: [SymmetricKey] = []) throws(EnvelopeError) {
        guard current.bitCount == 256, previous.allSatisfy({ $0.bitCount == 256 }) else {
            throw .invalidMasterKey
        }
        var keys: [KeyID: SymmetricKey] = [:]
        for key in previous { keys[KeyID(of: key)] = key }
        currentID = KeyID(of: current)
        keys[currentID] = current
        self.keys = keys
    }

    /// Convenience for raw key bytes, as read from the environment.
    public init(current: [UInt8], previous: [[UInt8]] = []) throws(EnvelopeError) {
        try self.init(current: SymmetricKey(data: current), previous: previous.map { SymmetricKey(data: $0) })
    }

    /// The key new data is wrapped under.
    var currentKey: SymmetricKey { keys[currentID]! }

    /// The key with `id`, if this keyring holds it.
    func key(for id: KeyID) -> SymmetricKey? { keys[id] }
}

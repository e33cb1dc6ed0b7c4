import Crypto
import Foundation

/// Envelope encryption for secrets at rest: each value gets a fresh AES-256-GCM data key, and that
/// data key is itself sealed under the keyring's current master key.
///
/// Layout (version 1):
///
/// | bytes | content |
/// | --- | --- |
/// | 1 | format version, `0x01` |
/// | 8 | master key id |
/// | 60 | wrapped data key: AES-GCM nonce (12) ‖ sealed key (32) ‖ tag (16), authenticating the two fields above |
/// | 28 + n | data: AES-GCM nonce (12) ‖ ciphertext (n) ‖ tag (16), authenticating the caller's `context` |
///
/// `context` binds a ciphertext to where it belongs (for example `"config_revisions.body:42"`), so a
/// value copied into another row fails to open. Rotating the master key only re-wraps the 60-byte
/// data key; the data itself is never re-encrypted.
public struct EnvelopeEncryption: Sendable {
    /// The keyring used to wrap and unwrap data keys.
    public let keyring: MasterKeyring

    static let version: UInt8 = 1
    static let headerLength = 1 + MasterKeyring.KeyID.length
    static let wrappedKeyLength = 12 + 32 + 16
    static let minimumLength = headerLength + wrappedKeyLength + 12 + 16

    /// Creates an encryptor over `keyring`.
    public init(keyring: MasterKeyring) {
        self.keyring = keyring
    }

    /// Encrypts `plaintext` for storage, bound to `context`.
    public func seal(_ plaintext: some DataProtocol, context: String) throws -> [UInt8] {
        let dataKey = SymmetricKey(size: .bits256)
        let header = [Self.version] + keyring.currentID.bytes
        let wrappedKey = try dataKey.withUnsafeBytes { keyBytes in
            try AES.GCM.seal(Array(keyBytes), using: keyring.currentKey, authenticating: header).combined!
        }
        let sealedData = try AES.GCM.seal(plaintext, using: dataKey, authenticating: Array(context.utf8)).combined!
        return header + Array(wrappedKey) + Array(sealedData)
    }

    /// Decrypts a ciphertext made by `seal` with the same `context`.
    public func open(_ ciphertext: some DataProtocol, context: String) throws(EnvelopeError) -> [UInt8] {
        let parts = try split(Array(ciphertext))
        let dataKey = try unwrapDataKey(parts)
        do {
            let box = try AES.GCM.SealedBox(combined: parts.sealedData)
            return Array(try AES.GCM.open(box, using: dataKey, authenticating: Array(context.utf8)))
        } catch {
            throw .authenticationFailed
        }
    }

    /// Whether `ciphertext` is wrapped under a master key other than the current one.
    public func needsRewrap(_ ciphertext: some DataProtocol) -> Bool {
        guard let parts = try? split(Array(ciphertext)) else { return false }
        return parts.keyID != keyring.currentID
    }

    /// Re-wraps the data key of `ciphertext` under the current master key, leaving the data as it is.
    ///
    /// Returns nil when it already is under the current key, so callers write only what changed.
    public func rewrap(_ ciphertext: some DataProtocol) throws(EnvelopeError) -> [UInt8]? {
        let parts = try split(Array(ciphertext))
        guard parts.keyID != keyring.currentID else { return nil }
        let dataKey = try unwrapDataKey(parts)
        let header = [Self.version] + keyring.currentID.bytes
        let wrappedKey: Data
        do {
            wrappedKey = try dataKey.withUnsafeBytes { keyBytes in
                try AES.GCM.seal(Array(keyBytes), using: keyring.currentKey, authenticating: header).combined!
            }
        } catch {
            throw .authenticationFailed
        }
        return header + Array(wrappedKey) + parts.sealedData
    }

    private struct Parts {
        var header: [UInt8]
        var keyID: MasterKeyring.KeyID
        var wrappedKey: [UInt8]
        var sealedData: [UInt8]
    }

    private func split(_ bytes: [UInt8]) throws(EnvelopeError) -> Parts {
        guard let version = bytes.first else { throw .malformed }
        guard version == Self.version else { throw .unsupportedVersion(version) }
        guard bytes.count >= Self.minimumLength else { throw .malformed }
        let keyEnd = Self.headerLength + Self.wrappedKeyLength
        return Parts(
            header: Array(bytes[0..<Self.headerLength]),
            keyID: MasterKeyring.KeyID(bytes: Array(bytes[1..<Self.headerLength])),
            wrappedKey: Array(bytes[Self.headerLength..<keyEnd]),
            sealedData: Array(bytes[keyEnd...])
        )
    }

    private func unwrapDataKey(_ parts: Parts) throws(EnvelopeError) -> SymmetricKey {
        guard let masterKey = keyring.key(for: parts.keyID) else {
            throw .unknownMasterKey(parts.keyID.description)
        }
        do {
            let box = try AES.GCM.SealedBox(combined: parts.wrappedKey)
            return SymmetricKey(data: try AES.GCM.open(box, using: masterKey, authenticating: parts.header))
        } catch {
            throw .authenticationFailed
        }
    }
}

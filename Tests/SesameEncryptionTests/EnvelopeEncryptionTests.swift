import Crypto
import Foundation
import Testing

@testable import SesameEncryption

@Suite("Envelope encryption at rest")
struct EnvelopeEncryptionTests {
    let oldKey = SymmetricKey(size: .bits256)
    let newKey = SymmetricKey(size: .bits256)
    let plaintext = Array(#"{"api_keys":{"stripe":"sk_live_123"}}"#.utf8)

    func encryption(current: SymmetricKey, previous: [SymmetricKey] = []) throws -> EnvelopeEncryption {
        EnvelopeEncryption(keyring: try MasterKeyring(current: current, previous: previous))
    }

    @Test("sealed data opens to the original bytes and does not contain them")
    func roundTrip() throws {
        let box = try encryption(current: oldKey)
        let sealed = try box.seal(plaintext, context: "config_revisions.body:1")
        #expect(try box.open(sealed, context: "config_revisions.body:1") == plaintext)
        #expect(!Data(sealed).contains(Data("sk_live_123".utf8)))
        #expect(sealed.count == plaintext.count + EnvelopeEncryption.minimumLength)
    }

    @Test("sealing the same plaintext twice gives different ciphertexts")
    func randomized() throws {
        let box = try encryption(current: oldKey)
        #expect(try box.seal(plaintext, context: "c") != box.seal(plaintext, context: "c"))
    }

    @Test("every altered byte is detected", arguments: [0, 1, 9, 40, 69, 75, 90])
    func tamperedByte(position: Int) throws {
        let box = try encryption(current: oldKey)
        var sealed = try box.seal(plaintext, context: "c")
        sealed[position] ^= 0x01
        #expect(throws: EnvelopeError.self) { try box.open(sealed, context: "c") }
    }

    @Test("an altered data byte fails authentication")
    func tamperedData() throws {
        let box = try encryption(current: oldKey)
        var sealed = try box.seal(plaintext, context: "c")
        sealed[sealed.count - 20] ^= 0x80
        #expect(throws: EnvelopeError.authenticationFailed) { try box.open(sealed, context: "c") }
    }

    @Test("a ciphertext moved to another context fails authentication")
    func wrongContext() throws {
        let box = try encryption(current: oldKey)
        let sealed = try box.seal(plaintext, context: "user_data.body:alice")
        #expect(throws: EnvelopeError.authenticationFailed) { try box.open(sealed, context: "user_data.body:mallory") }
    }

    @Test("truncated, empty and foreign-version input is refused with a clear error")
    func malformed() throws {
        let box = try encryption(current: oldKey)
        let sealed = try box.seal(plaintext, context: "c")
        #expect(throws: EnvelopeError.malformed) { try box.open([UInt8](), context: "c") }
        #expect(throws: EnvelopeError.malformed) { try box.open(Array(sealed.prefix(60)), context: "c") }
        #expect(throws: EnvelopeError.unsupportedVersion(2)) { try box.open([2] + sealed.dropFirst(), context: "c") }
        #expect(throws: EnvelopeError.authenticationFailed) { try box.open(Array(sealed.dropLast()), context: "c") }
    }

    @Test("a ciphertext under a master key that is not configured names that key's id")
    func unknownMasterKey() throws {
        let sealed = try encryption(current: oldKey).seal(plaintext, context: "c")
        let other = try encryption(current: newKey)
        #expect(throws: EnvelopeError.unknownMasterKey(MasterKeyring.KeyID(of: oldKey).description)) {
            try other.open(sealed, context: "c")
        }
    }

    @Test("after rotation, old ciphertexts still open and re-wrap to the new key without re-encrypting data")
    func rotation() throws {
        let before = try encryption(current: oldKey)
        let sealed = try before.seal(plaintext, context: "c")
        let after = try encryption(current: newKey, previous: [oldKey])

        #expect(try after.open(sealed, context: "c") == plaintext)
        #expect(after.needsRewrap(sealed))
        let rewrapped = try #require(try after.rewrap(sealed))
        #expect(!after.needsRewrap(rewrapped))
        #expect(Array(rewrapped.suffix(from: 69)) == Array(sealed.suffix(from: 69)))
        #expect(try after.rewrap(rewrapped) == nil)

        let newOnly = try encryption(current: newKey)
        #expect(try newOnly.open(rewrapped, context: "c") == plaintext)
        #expect(throws: EnvelopeError.self) { try newOnly.open(sealed, context: "c") }
    }

    @Test("master keys must be 256 bits")
    func keyLength() {
        #expect(throws: EnvelopeError.invalidMasterKey) { try MasterKeyring(current: SymmetricKey(size: .bits128)) }
        #expect(throws: EnvelopeError.invalidMasterKey) { try MasterKeyring(current: [UInt8](repeating: 0, count: 31)) }
    }

    @Test("key ids are stable for a key and differ between keys")
    func keyIDs() {
        let keyBytes = [UInt8](repeating: 42, count: 32)
        #expect(MasterKeyring.KeyID(of: SymmetricKey(data: keyBytes)) == MasterKeyring.KeyID(of: SymmetricKey(data: keyBytes)))
        #expect(MasterKeyring.KeyID(of: oldKey) != MasterKeyring.KeyID(of: newKey))
    }
}

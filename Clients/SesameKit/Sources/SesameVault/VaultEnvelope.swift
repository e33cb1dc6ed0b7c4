import Crypto
import CryptoExtras
import Foundation

/// Sesame's zero-knowledge envelope: a document encrypted with a vault password on the developer's
/// machine, so the server stores and delivers ciphertext it cannot read.
///
/// ```json
/// {"sesameVault": 1,
///  "kdf": {"name": "scrypt", "n": 32768, "r": 8, "p": 1, "salt": "<base64, 16 bytes>"},
///  "cipher": "AES-256-GCM", "nonce": "<base64, 12 bytes>", "ciphertext": "<base64, ciphertext ‖ 16-byte tag>"}
/// ```
///
/// key = HKDF-SHA256(ikm: scrypt(password UTF-8, salt, n, r, p, 32 bytes), salt: salt,
/// info: "sesame-vault/1/aes-256-gcm", 32 bytes); AES-256-GCM with that key, the nonce, and the
/// associated data "sesame-vault/1". Every parameter travels in the envelope, so any client opens it.
public struct VaultEnvelope: Codable, Sendable, Equatable {
    /// scrypt's parameters and salt.
    public struct KDF: Codable, Sendable, Equatable {
        public var name: String
        public var n: Int
        public var r: Int
        public var p: Int
        public var salt: String
    }

    public var sesameVault: Int
    public var kdf: KDF
    public var cipher: String
    public var nonce: String
    public var ciphertext: String

    /// The envelope format this code writes and reads.
    public static let version = 1
    static let associatedData = Data("sesame-vault/1".utf8)
    static let hkdfInfo = Data("sesame-vault/1/aes-256-gcm".utf8)

    /// What opening can go wrong with; one message for a wrong password and for tampering, because
    /// they cannot be told apart (and must not be).
    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        case notAnEnvelope(String)
        case wrongPasswordOrCorrupted

        public var description: String {
            switch self {
            case .notAnEnvelope(let why): "not a Sesame vault envelope: \(why)"
            case .wrongPasswordOrCorrupted: "wrong vault password or corrupted file"
            }
        }
    }

    /// scrypt cost: 2^15 rounds of 8 blocks (32 MiB, about 0.1 s) by default; envelopes asking for
    /// more than 2^20 / 16 / 4 are refused, so a crafted file cannot exhaust memory.
    public struct Cost: Sendable {
        public var n = 1 << 15
        public var r = 8
        public var p = 1
        public init() {}
        public init(n: Int, r: Int, p: Int) {
            self.n = n
            self.r = r
            self.p = p
        }
    }

    /// Encrypts `plaintext` under `password`.
    public static func seal(_ plaintext: some DataProtocol, password: String, cost: Cost = Cost()) throws -> VaultEnvelope {
        let salt = Data((0..<16).map { _ in UInt8.random(in: 0...255) })
        let key = try deriveKey(password: password, salt: salt, n: cost.n, r: cost.r, p: cost.p)
        let box = try AES.GCM.seal(Data(plaintext), using: key, authenticating: associatedData)
        return VaultEnvelope(
            sesameVault: version, kdf: KDF(name: "scrypt", n: cost.n, r: cost.r, p: cost.p, salt: salt.base64EncodedString()),
            cipher: "AES-256-GCM", nonce: Data(box.nonce).base64EncodedString(),
            ciphertext: (box.ciphertext + box.tag).base64EncodedString())
    }

    /// Decrypts the envelope with `password`.
    public func open(password: String) throws(Failure) -> Data {
        guard sesameVault == Self.version else { throw .notAnEnvelope("version \(sesameVault) is not supported; update the CLI") }
        guard kdf.name == "scrypt", cipher == "AES-256-GCM" else { throw .notAnEnvelope("unknown kdf or cipher") }
        guard kdf.n > 1, kdf.n <= 1 << 20, kdf.n & (kdf.n - 1) == 0, (1...16).contains(kdf.r), (1...4).contains(kdf.p) else {
            throw .notAnEnvelope("scrypt parameters out of range")
        }
        guard let salt = Data(base64Encoded: kdf.salt), salt.count >= 16, let nonce = Data(base64Encoded: nonce), nonce.count == 12,
            let sealed = Data(base64Encoded: ciphertext), sealed.count >= 16
        else { throw .notAnEnvelope("salt, nonce or ciphertext is not valid base64 of the right length") }
        do {
            let key = try Self.deriveKey(password: password, salt: salt, n: kdf.n, r: kdf.r, p: kdf.p)
            let box = try AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: nonce), ciphertext: sealed.dropLast(16), tag: sealed.suffix(16))
            return try AES.GCM.open(box, using: key, authenticating: Self.associatedData)
        } catch {
            throw .wrongPasswordOrCorrupted
        }
    }

    /// The envelope in `json`, if it is one (a document with `"sesameVault"`), else nil.
    public static func decode(_ json: some DataProtocol) throws(Failure) -> VaultEnvelope? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json)) as? [String: Any], object["sesameVault"] != nil else {
            return nil
        }
        do {
            return try JSONDecoder().decode(VaultEnvelope.self, from: Data(json))
        } catch {
            throw .notAnEnvelope("a field is missing or has the wrong type")
        }
    }

    /// The envelope as JSON (keys sorted).
    public func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }

    static func deriveKey(password: String, salt: Data, n: Int, r: Int, p: Int) throws -> SymmetricKey {
        let stretched = try CryptoExtras.KDF.Scrypt.deriveKey(
            from: Data(password.utf8), salt: salt, outputByteCount: 32, rounds: n, blockSize: r, parallelism: p)
        return HKDF<SHA256>.deriveKey(inputKeyMaterial: stretched, salt: salt, info: hkdfInfo, outputByteCount: 32)
    }
}

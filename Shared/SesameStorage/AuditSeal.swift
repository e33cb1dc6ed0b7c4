import Crypto
import Foundation

/// What makes an audit entry Sesame's: an HMAC-SHA256 of the entry's chain hash under a key
/// derived from the master key, which never lives in PostgreSQL. The chain alone shows an entry
/// changed or removed; a writer with database rights could still append an entry that chains
/// correctly. With the seal, only a process holding the master key can extend an app's chain.
///
/// Bound for the work of a service (`AuditSealMiddleware`, the operator's one-shot commands);
/// `AuditLog.append` seals each entry with it, `AuditLog.verify` checks it.
public struct AuditSeal: Sendable {
    /// The seal of the work under way; an entry appended without one has no seal.
    @TaskLocal public static var bound: AuditSeal?

    private let current: SymmetricKey
    /// The current key first, then those of earlier master keys (entries sealed before a rotation).
    private let keys: [SymmetricKey]

    /// The seal of the master key `current`, which also checks entries sealed under `previous` ones.
    public init(masterKey current: [UInt8], previous: [[UInt8]] = []) {
        self.keys = ([current] + previous).map(Self.derive)
        self.current = keys[0]
    }

    static func derive(_ masterKey: [UInt8]) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: masterKey), info: Data("sesame audit seal".utf8), outputByteCount: 32)
    }

    /// The seal of an entry whose chain hash is `hash`.
    func seal(_ hash: [UInt8]) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: hash, using: current))
    }

    /// Whether `seal` was made for `hash` by this master key or an earlier one.
    func verifies(_ seal: [UInt8], of hash: [UInt8]) -> Bool {
        keys.contains { HMAC<SHA256>.isValidAuthenticationCode(seal, authenticating: hash, using: $0) }
    }
}

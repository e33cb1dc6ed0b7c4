/// Why a ciphertext could not be produced or opened. Never carries key material or plaintext.
public enum EnvelopeError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A master key is not 32 bytes.
    case invalidMasterKey
    /// The bytes are not a Sesame ciphertext (too short, or cut).
    case malformed
    /// The ciphertext was written by a newer format this build does not know.
    case unsupportedVersion(UInt8)
    /// The ciphertext's master key is not in the keyring (a retired key was dropped too early?).
    case unknownMasterKey(String)
    /// Authentication failed: the ciphertext was altered, or opened with the wrong context.
    case authenticationFailed

    public var description: String {
        switch self {
        case .invalidMasterKey: "master key must be 32 bytes"
        case .malformed: "ciphertext is malformed or truncated"
        case .unsupportedVersion(let version): "ciphertext format version \(version) is not supported"
        case .unknownMasterKey(let id): "ciphertext is wrapped under master key \(id), which is not configured"
        case .authenticationFailed: "ciphertext failed authentication (tampered, or wrong context)"
        }
    }
}

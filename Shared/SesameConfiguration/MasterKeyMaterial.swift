import Foundation

/// The master key (and any previous ones still needed to read old data), as raw bytes.
///
/// `SESAME_MASTER_KEY` holds base64 of 32 random bytes; `SESAME_MASTER_KEY_PREVIOUS` may list
/// earlier keys, comma-separated, so data wrapped under them stays readable during a rotation.
public struct MasterKeyMaterial: Sendable {
    /// The key new data is wrapped under.
    public let current: [UInt8]
    /// Retired keys, only ever used to unwrap.
    public let previous: [[UInt8]]
    /// True when no key was configured and `current` was generated for this process only.
    public let isEphemeral: Bool

    /// Creates key material from already-decoded keys.
    public init(current: [UInt8], previous: [[UInt8]] = [], isEphemeral: Bool = false) {
        self.current = current
        self.previous = previous
        self.isEphemeral = isEphemeral
    }

    /// The length every master key must have (AES-256).
    public static let keyLength = 32

    /// Decodes base64 of exactly 32 bytes, or fails naming `variable`.
    static func decodeKey(_ text: String, variable: String) throws(ConfigurationError) -> [UInt8] {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let data = Data(base64Encoded: trimmed), data.count == keyLength else {
            throw ConfigurationError(
                variable: variable,
                expectation: "base64 of exactly 32 random bytes (generate one with: openssl rand -base64 32)"
            )
        }
        return Array(data)
    }

    /// 32 fresh random bytes.
    static func generate() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<keyLength).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }
}

/// The token signing key rotated: verifiers reload the public keys.
public struct SigningKeyRotated: Codable, Sendable, Equatable {
    /// The new key's `kid`.
    public var kid: String

    public init(kid: String) {
        self.kid = kid
    }
}

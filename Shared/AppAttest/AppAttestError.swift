/// A failed App Attest check, naming the step of Apple's validation that failed.
public struct AppAttestError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The validation steps, in the order Apple's "Validating apps that connect to your server" lists them.
    public enum Step: String, Sendable, CaseIterable {
        /// The bytes are not a well-formed attestation or assertion.
        case format
        /// The certificate chain does not lead to a trusted App Attest root at the verification time.
        case chain
        /// The leaf's nonce extension does not equal SHA256(authenticatorData ‖ clientDataHash).
        case nonce
        /// The key id is not SHA256 of the leaf certificate's public key.
        case keyId
        /// The authenticator data's RP ID hash is not SHA256 of the App ID.
        case rpIdHash
        /// The sign counter is not 0 (attestation) or not greater than the stored one (assertion).
        case counter
        /// The AAGUID is neither `appattestdevelop` nor `appattest` + seven zero bytes, or not the environment required.
        case aaguid
        /// The credential id is not the key id.
        case credentialId
        /// The assertion's signature does not verify under the stored public key.
        case signature
    }

    /// The step that failed.
    public let step: Step
    /// What exactly was wrong, for logs; never contains secrets (there are none in these inputs).
    public let reason: String

    /// Creates an error.
    public init(_ step: Step, _ reason: String) {
        self.step = step
        self.reason = reason
    }

    public var description: String { "\(step.rawValue): \(reason)" }

    /// Errors are equal when they name the same step: callers (and tests) decide by step; the
    /// reason is free text for logs.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.step == rhs.step }
}

/// Why a WebAuthn registration or assertion was refused: the step that failed, and what it found.
public struct WebAuthnError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The checks, in the order they run.
    public enum Step: String, Sendable {
        /// The client data or attestation object does not parse.
        case format
        /// `clientDataJSON.type` is not `webauthn.create` (registration) or `webauthn.get` (sign-in).
        case type
        /// The challenge is not the one this server issued.
        case challenge
        /// The page that called WebAuthn is not the dashboard's origin.
        case origin
        /// The authenticator data was made for another relying party.
        case rpIdHash
        /// The user presence flag is not set.
        case userPresence
        /// The user verification flag (biometrics or PIN) is not set.
        case userVerification
        /// An attestation format other than `none`.
        case attestationFormat
        /// The credential's public key is not an ES256 (P-256) COSE key.
        case publicKey
        /// The assertion's signature does not verify with the credential's key.
        case signature
        /// The signature counter did not increase: a cloned authenticator.
        case signCount
    }

    public let step: Step
    public let reason: String

    public init(_ step: Step, _ reason: String) {
        self.step = step
        self.reason = reason
    }

    public var description: String { "\(step.rawValue): \(reason)" }
}

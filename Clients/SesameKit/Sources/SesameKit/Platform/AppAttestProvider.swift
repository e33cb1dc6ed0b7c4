import Foundation

/// App Attest as SesameKit uses it: `DeviceCheckAppAttest` on a device (Apple's
/// `DCAppAttestService`), `SoftwareAppAttest` in tests and on Linux.
public protocol AppAttestProvider: Sendable {
    /// Whether this device can attest at all (false on the Simulator and old devices).
    var isSupported: Bool { get }
    /// Creates a key in the Secure Enclave; returns its id (base64, as `generateKey` gives it).
    func generateKey() async throws -> String
    /// Apple's attestation of `keyID` over `clientDataHash`.
    func attestKey(_ keyID: String, clientDataHash: Data) async throws -> Data
    /// An assertion by `keyID` over `clientDataHash`.
    func generateAssertion(_ keyID: String, clientDataHash: Data) async throws -> Data
}

/// Why an `AppAttestProvider` failed, in the terms Apple's guidance acts on.
public enum AppAttestProviderError: Error, Sendable, Equatable {
    /// Apple's servers could not be reached: retry later with the same key.
    case serverUnavailable
    /// The key is unusable (lost, or its attestation refused): make a new one.
    case invalidKey
    /// App Attest is not available on this device.
    case unsupported
}

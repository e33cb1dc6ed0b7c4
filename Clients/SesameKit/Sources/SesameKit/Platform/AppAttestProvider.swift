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
    /// A DeviceCheck token of this device (`DCDevice.generateToken()`), sent with each attest so that
    /// Sesame can ask Apple for the device's two bits (a ban that survives a reinstall); nil where
    /// DeviceCheck is unavailable.
    func deviceCheckToken() async -> Data?
}

extension AppAttestProvider {
    /// No DeviceCheck token: providers that are not a device's own.
    public func deviceCheckToken() async -> Data? { nil }
}

/// Why an `AppAttestProvider` failed, in the terms Apple's guidance acts on.
public enum AppAttestProviderError: Error, Sendable, Equatable {
    /// Apple's servers could not be reached: retry later with the same key.
    case serverUnavailable
    /// The key is unusable (lost, or its attestation refused): make a new one.
    case invalidKey
    /// App Attest is not available on this device.
    case unsupported
    /// The call was malformed (Apple's `invalidInput`): a defect, not the key's fault; the key is kept.
    case invalidInput
    /// Any other failure of the device's App Attest (`unknownSystemFailure` and codes Apple adds):
    /// the key is kept and the call may be tried again later.
    case systemFailure(code: Int)
}

/// Not App Attest: a debug token from `sesame debug-tokens create`, for the Simulator, CI jobs and
/// developers' devices. Sesame answers it with `debug`-tier tokens, which see only the config keys
/// the upload opened to `debug` or `unattested` (`SesameConfig.withheld` names the rest), and no
/// blobs or user data unless the app's policy lowers them. Never ship a debug token in a release.
///
/// ```swift
/// #if DEBUG
/// let attestation: any AppAttestProvider = DebugTokenAttest(token: ProcessInfo.processInfo.environment["SESAME_DEBUG_TOKEN"] ?? "")
/// #else
/// let attestation: any AppAttestProvider = DeviceCheckAppAttest()
/// #endif
/// ```
public struct DebugTokenAttest: AppAttestProvider {
    /// The debug token (`sesame_debug_…`).
    public let token: String

    /// Uses `token` instead of App Attest.
    public init(token: String) {
        self.token = token
    }

    /// False: SesameKit exchanges the token instead of attesting.
    public var isSupported: Bool { false }
    public func generateKey() async throws -> String { throw AppAttestProviderError.unsupported }
    public func attestKey(_ keyID: String, clientDataHash: Data) async throws -> Data { throw AppAttestProviderError.unsupported }
    public func generateAssertion(_ keyID: String, clientDataHash: Data) async throws -> Data { throw AppAttestProviderError.unsupported }
}

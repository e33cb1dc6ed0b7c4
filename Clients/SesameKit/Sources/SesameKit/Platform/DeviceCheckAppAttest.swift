#if canImport(DeviceCheck)
@preconcurrency import DeviceCheck
import Foundation

/// `AppAttestProvider` over Apple's `DCAppAttestService`: keys in the Secure Enclave, attested by
/// Apple. Available on real devices; `isSupported` is false on the Simulator.
///
/// Apple-only, so kept to the calls themselves and the mapping of `DCError` to what SesameKit acts
/// on; everything with logic sits behind `AppAttestProvider` and is tested on Linux.
@available(iOS 14.0, macOS 11.0, *)
public struct DeviceCheckAppAttest: AppAttestProvider {
    /// The shared `DCAppAttestService`.
    public init() {}

    public var isSupported: Bool { DCAppAttestService.shared.isSupported }

    public func generateKey() async throws -> String {
        do { return try await DCAppAttestService.shared.generateKey() } catch { throw Self.translated(error) }
    }

    public func attestKey(_ keyID: String, clientDataHash: Data) async throws -> Data {
        do { return try await DCAppAttestService.shared.attestKey(keyID, clientDataHash: clientDataHash) } catch { throw Self.translated(error) }
    }

    public func generateAssertion(_ keyID: String, clientDataHash: Data) async throws -> Data {
        do { return try await DCAppAttestService.shared.generateAssertion(keyID, clientDataHash: clientDataHash) } catch {
            throw Self.translated(error)
        }
    }

    /// Apple's guidance: `serverUnavailable` keeps the key for a later try; `invalidKey` and
    /// `invalidInput` need a new key; `featureUnsupported` means no App Attest here.
    static func translated(_ error: any Error) -> any Error {
        guard let error = error as? DCError else { return error }
        switch error.code {
        case .serverUnavailable: return AppAttestProviderError.serverUnavailable
        case .featureUnsupported: return AppAttestProviderError.unsupported
        case .invalidKey, .invalidInput: return AppAttestProviderError.invalidKey
        default: return error
        }
    }
}
#endif

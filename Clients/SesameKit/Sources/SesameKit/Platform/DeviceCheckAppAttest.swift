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

    /// A token from `DCDevice`, asked twice at most (its failures are transient: Apple's servers, the
    /// network); nil where DeviceCheck is unsupported or both tries failed, and the attest goes without
    /// one (an app that bans devices then refuses it, and the install stays at the lower tiers).
    public func deviceCheckToken() async -> Data? {
        guard DCDevice.current.isSupported else { return nil }
        for _ in 0..<2 {
            if let token = try? await DCDevice.current.generateToken() { return token }
        }
        return nil
    }

    /// Apple's guidance (`DCError.Code`): `serverUnavailable` keeps the key for a later try with the
    /// same `clientDataHash`; `invalidKey` needs a new key; `featureUnsupported` means no App Attest
    /// here; `invalidInput` is a malformed call (the key is fine). Everything else
    /// (`unknownSystemFailure`, codes added later, errors that are not `DCError`) keeps the key.
    static func translated(_ error: any Error) -> AppAttestProviderError {
        guard let error = error as? DCError else { return .systemFailure(code: (error as NSError).code) }
        switch error.code {
        case .serverUnavailable: return .serverUnavailable
        case .featureUnsupported: return .unsupported
        case .invalidKey: return .invalidKey
        case .invalidInput: return .invalidInput
        default: return .systemFailure(code: error.code.rawValue)
        }
    }
}
#endif

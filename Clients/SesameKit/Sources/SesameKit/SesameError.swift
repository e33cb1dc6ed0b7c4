import Foundation

/// Every way fetching from Sesame can fail, as one enum a UI can switch on.
public enum SesameError: Error, Sendable, Equatable {
    /// A kill switch covers this app version: show `reason` (the text the team wrote) to the user.
    /// The cached config of this version is purged and never served again.
    case versionDisabled(reason: String)
    /// Nothing is published for this app version.
    case noConfig
    /// Sesame cannot be reached and the saved config may not be served: it is older than
    /// `CachePolicy.maxStaleness` (the cache expired), or stale under `.failHard`; and there is no
    /// fallback config.
    case staleCacheExpired
    /// This device cannot use App Attest (a Simulator, an old device, or App Attest unavailable).
    case unsupportedDevice
    /// Sesame asked to wait this long before asking again.
    case rateLimited(retryAfter: Duration)
    /// Sesame refused the request: its stable `code` and a sentence saying why.
    case server(code: String, message: String)
    /// The network failed, or Sesame was unavailable, and there was nothing cached to serve.
    case network(underlying: String)
    /// A zero-knowledge config could not be opened: no password configured, or the wrong one.
    case zeroKnowledgeConfig(String)
    /// The secure store (the Keychain) failed to read or keep the App Attest key id or the refresh
    /// token, e.g. before the device's first unlock: `detail` names the store's error. Nothing was
    /// sent; retry later.
    case secureStore(String)
}

extension SesameError: LocalizedError {
    public var errorDescription: String? {
        switch self {
        case .versionDisabled(let reason): reason
        case .noConfig: "No configuration is published for this app version."
        case .staleCacheExpired: "The saved configuration is too old to use and Sesame cannot be reached."
        case .unsupportedDevice: "This device cannot prove the app is genuine (App Attest is unavailable)."
        case .rateLimited(let wait): "Too many requests; retry in \(wait.components.seconds) seconds."
        case .server(let code, let message): "\(message) (\(code))"
        case .network(let underlying): "Sesame cannot be reached: \(underlying)"
        case .zeroKnowledgeConfig(let problem): "The encrypted configuration cannot be opened: \(problem)"
        case .secureStore(let detail): "The device's secure storage is unavailable: \(detail)"
        }
    }
}

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

extension SesameError {
    /// A stable code for programs and analytics: Sesame's own code for `.server`, else the case's
    /// name in snake case (`version_disabled`, `no_config`, `stale_cache_expired`,
    /// `unsupported_device`, `rate_limited`, `network`, `zero_knowledge_config`, `secure_store`).
    public var code: String {
        switch self {
        case .versionDisabled: "version_disabled"
        case .noConfig: "no_config"
        case .staleCacheExpired: "stale_cache_expired"
        case .unsupportedDevice: "unsupported_device"
        case .rateLimited: "rate_limited"
        case .server(let code, _): code
        case .network: "network"
        case .zeroKnowledgeConfig: "zero_knowledge_config"
        case .secureStore: "secure_store"
        }
    }

    /// The text the team wrote for the kill switch over this version (`versionDisabled`), as data
    /// for the update screen; nil for every other error.
    public var killSwitchReason: String? {
        if case .versionDisabled(let reason) = self { return reason }
        return nil
    }

    /// Whether trying again later may succeed with nothing else changed (the network, Sesame's
    /// availability, a wait it asked for, a locked Keychain, a DeviceCheck token Apple could not
    /// make); false when the app must act.
    public var isTransient: Bool {
        switch self {
        case .network, .rateLimited, .secureStore, .staleCacheExpired: true
        case .server(let code, _): Self.transientServerCodes.contains(code)
        case .versionDisabled, .noConfig, .unsupportedDevice, .zeroKnowledgeConfig: false
        }
    }

    /// `.server` codes a later try can get past: an attest that went without a DeviceCheck token
    /// (`device_check_required` from Sesame, `device_check_unavailable` before asking it).
    static let transientServerCodes: Set<String> = ["device_check_required", "device_check_unavailable"]
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

    /// What the app should do next.
    public var recoverySuggestion: String? {
        switch self {
        case .versionDisabled:
            "This app version was switched off: show the update screen with `killSwitchReason` and a link to the App Store."
        case .noConfig:
            "Publish a config for this version (`sesame config upload`), or ship a `fallbackConfig`."
        case .staleCacheExpired:
            "Retry when the network is back; a `fallbackConfig` lets the app run meanwhile."
        case .unsupportedDevice:
            "Use `DebugTokenAttest` on the Simulator and in CI; for real devices without App Attest, let the app's policy admit unattested installs."
        case .rateLimited(let wait):
            "Wait \(wait.components.seconds) seconds before asking Sesame again."
        case .server(let code, _) where Self.transientServerCodes.contains(code):
            "Retry later: DeviceCheck could not make a device token this time."
        case .server(let code, _):
            "Sesame refused the request (\(code)); the message says why. Retrying unchanged will not help."
        case .network:
            "Retry later; SesameKit serves the saved config meanwhile when its cache policy allows."
        case .zeroKnowledgeConfig:
            "Set `SesameClient.Configuration.zeroKnowledgePassword` to the password the config was encrypted with."
        case .secureStore:
            "Retry after the device is unlocked (the Keychain is unreadable before the first unlock)."
        }
    }
}

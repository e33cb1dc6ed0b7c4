import Foundation

/// Where the app's Sesame is and who the app is.
public struct SesameConfiguration: Sendable {
    /// The gateway's address, e.g. `https://sesame.example.com`.
    public var baseURL: URL
    /// The Apple team id (10 characters).
    public var teamID: String
    /// The bundle id.
    public var bundleID: String
    /// The version the app runs (`CFBundleShortVersionString`): configs, kill switches and
    /// revocations are addressed by it.
    public var appVersion: String
    /// How long a saved config may be used when Sesame cannot be reached.
    public var cachePolicy: CachePolicy
    /// What to serve when there is nothing else: no network, no cache. Nil to fail instead.
    public var fallbackConfig: [String: SesameConfig.Value]?
    /// The password zero-knowledge configs are encrypted with (`sesame encrypt`); nil when the app
    /// has none.
    public var zeroKnowledgePassword: String?

    /// Describes the app; only `baseURL`, the ids and `appVersion` are required.
    public init(
        baseURL: URL, teamID: String, bundleID: String, appVersion: String, cachePolicy: CachePolicy = CachePolicy(),
        fallbackConfig: [String: SesameConfig.Value]? = nil, zeroKnowledgePassword: String? = nil
    ) {
        self.baseURL = baseURL
        self.teamID = teamID
        self.bundleID = bundleID
        self.appVersion = appVersion
        self.cachePolicy = cachePolicy
        self.fallbackConfig = fallbackConfig
        self.zeroKnowledgePassword = zeroKnowledgePassword
    }

    /// `TEAMID.bundle.id`, as App Attest binds keys to it.
    public var appID: String { "\(teamID).\(bundleID)" }
}

/// How long a saved config may stand in for Sesame.
public struct CachePolicy: Sendable, Equatable {
    /// Past this age (since Sesame last confirmed it) a saved config is too old: `onStaleConfig` decides.
    public var maxStaleness: Duration
    /// What happens past `maxStaleness`.
    public var onStaleConfig: StaleConfigBehavior

    /// A policy; by default a saved config serves for a week, with a warning past that.
    public init(maxStaleness: Duration = .seconds(7 * 86_400), onStaleConfig: StaleConfigBehavior = .warnAndUse) {
        self.maxStaleness = maxStaleness
        self.onStaleConfig = onStaleConfig
    }
}

/// What to do with a saved config older than `CachePolicy.maxStaleness` while Sesame cannot be reached.
public enum StaleConfigBehavior: Sendable, Equatable {
    /// Serve it, marked `isStale`, and log a warning.
    case warnAndUse
    /// Serve it, marked `isStale`, without a warning.
    case useSilently
    /// Do not serve it: the fallback config if there is one, else `SesameError.staleCacheExpired`.
    case failHard
}

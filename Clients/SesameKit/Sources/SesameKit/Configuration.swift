import Foundation

extension SesameClient {
    /// Where the app's Sesame is and who the app is.
    public struct Configuration: Sendable {
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

        /// The Info.plist keys `init(bundle:)` reads.
        public enum InfoKey {
            /// Sesame's address (`https://sesame.example.com`).
            public static let baseURL = "SesameBaseURL"
            /// The Apple team id.
            public static let teamID = "SesameTeamID"
        }

        /// The app `bundle` describes: `SesameBaseURL` and `SesameTeamID` from its Info.plist, its
        /// bundle id, and its version (`CFBundleShortVersionString`); the rest as `init`'s defaults.
        /// - Throws: `SesameClient.ConfigurationError` naming the key that is missing or malformed.
        public init(bundle: Bundle) throws(SesameClient.ConfigurationError) {
            let info = bundle.infoDictionary ?? [:]
            guard let address = info[InfoKey.baseURL] as? String, !address.isEmpty else { throw .missing(InfoKey.baseURL) }
            guard let baseURL = URL(string: address), let scheme = baseURL.scheme, ["https", "http"].contains(scheme), baseURL.host != nil else {
                throw .malformed(InfoKey.baseURL, "an https:// address")
            }
            guard let teamID = info[InfoKey.teamID] as? String, !teamID.isEmpty else { throw .missing(InfoKey.teamID) }
            guard let bundleID = bundle.bundleIdentifier, !bundleID.isEmpty else { throw .missing("CFBundleIdentifier") }
            guard let version = info["CFBundleShortVersionString"] as? String, !version.isEmpty else {
                throw .missing("CFBundleShortVersionString")
            }
            self.init(baseURL: baseURL, teamID: teamID, bundleID: bundleID, appVersion: version)
        }
    }

    /// Why a `Configuration` could not be read from a bundle.
    public enum ConfigurationError: Error, Sendable, Equatable, LocalizedError {
        /// The Info.plist has no value for this key.
        case missing(String)
        /// The key's value is not what it must be (the second value says what).
        case malformed(String, String)

        public var errorDescription: String? {
            switch self {
            case .missing(let key): "the app's Info.plist has no \(key); add it (SesameBaseURL: your Sesame's address, SesameTeamID: your Apple team id)."
            case .malformed(let key, let expected): "the app's Info.plist has a \(key) that is not \(expected)."
            }
        }
    }
}

extension SesameClient {
    /// How long a saved config may stand in for Sesame. A saved config is *fresh* for as long as Sesame
    /// said (`refreshAfter`, `max-age`), *stale* after that, and *expired* past `maxStaleness`: an
    /// expired config is never served (the fallback config, or `SesameError.staleCacheExpired`).
    public struct CachePolicy: Sendable, Equatable {
        /// Past this age (since Sesame last confirmed it) a saved config has expired and is not served,
        /// whatever `onStaleConfig` says. Seven days by default.
        public var maxStaleness: Duration
        /// What happens to a stale (not yet expired) config while Sesame cannot be reached.
        public var onStaleConfig: StaleConfigBehavior
        /// Whether a launch's first fetch waits for Sesame when its saved config is stale.
        public var atLaunch: LaunchRevalidation

        /// A policy; by default a saved config serves for a week, marked stale with a warning once past
        /// its freshness, and a launch starts from its saved config while Sesame is asked in the background.
        public init(
            maxStaleness: Duration = .seconds(7 * 86_400), onStaleConfig: StaleConfigBehavior = .warnAndUse,
            atLaunch: LaunchRevalidation = .serveSavedAndRevalidate
        ) {
            self.maxStaleness = maxStaleness
            self.onStaleConfig = onStaleConfig
            self.atLaunch = atLaunch
        }
    }

    /// What a launch's first `fetchConfig` does with a saved config that is stale (past its freshness,
    /// within `CachePolicy.maxStaleness`).
    public enum LaunchRevalidation: Sendable, Equatable {
        /// Return it at once (as `onStaleConfig` says) and ask Sesame in the background with
        /// `If-None-Match`; the next fetch gets what Sesame said. A kill switch or revocation then takes
        /// effect on the next fetch rather than this one. The default: a launch never waits for the network.
        case serveSavedAndRevalidate
        /// Ask Sesame first and serve the saved copy only when Sesame cannot be reached: a kill switch
        /// takes effect on the launch's first fetch, at the cost of a round trip.
        case askSesameFirst
    }

    /// What to do with a stale saved config (past its freshness, not yet past `CachePolicy.maxStaleness`)
    /// while Sesame cannot be reached.
    public enum StaleConfigBehavior: Sendable, Equatable {
        /// Serve it marked `isStale`, and log a warning. For most apps.
        case warnAndUse
        /// Serve it without marking it stale or warning. For games and media apps.
        case useSilently
        /// Do not serve it: the fallback config if there is one, else `SesameError.staleCacheExpired`.
        /// For apps that must never act on an old config (finance).
        case failHard
    }
}

// The names before 0.9.0, kept for a release so that apps migrate with a fix-it.

/// Renamed `SesameClient.CachePolicy`, so that an app's own `CachePolicy` does not collide with it.
@available(*, deprecated, renamed: "SesameClient.CachePolicy")
public typealias CachePolicy = SesameClient.CachePolicy
/// Renamed `SesameClient.LaunchRevalidation`.
@available(*, deprecated, renamed: "SesameClient.LaunchRevalidation")
public typealias LaunchRevalidation = SesameClient.LaunchRevalidation
/// Renamed `SesameClient.StaleConfigBehavior`.
@available(*, deprecated, renamed: "SesameClient.StaleConfigBehavior")
public typealias StaleConfigBehavior = SesameClient.StaleConfigBehavior

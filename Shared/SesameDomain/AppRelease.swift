import Foundation

/// What one app has released: its published configs by version pattern, and its kill switches and
/// emergency revocations. `resolve` is the product's core decision — what an app at a version gets —
/// with time a parameter, so delivery, admin's dry run and auth's refresh all decide the same way.
///
/// `Config` is whatever the caller holds for a published pattern: delivery the decrypted body,
/// admin the manifest entry.
public struct AppRelease<Config: Sendable>: Sendable {
    /// The published configs, by canonical version pattern (`2.1.3`, `2.1.*`, `2.*`, `*`).
    public var configs: [String: Config]
    /// The kill switches and emergency revocations.
    public var rules: AccessRules
    /// The staged rollouts in flight, by the pattern whose newest revision (in `configs`) they roll out.
    public var rollouts: [String: Rollout<Config>]
    /// Device overrides: by pattern, then by install (token subject), the config that install gets
    /// there whatever is published or rolling out ("show me the new config on my phone").
    public var overrides: [String: [String: Config]]

    public init(
        configs: [String: Config] = [:], rules: AccessRules = AccessRules(), rollouts: [String: Rollout<Config>] = [:],
        overrides: [String: [String: Config]] = [:]
    ) {
        self.configs = configs
        self.rules = rules
        self.rollouts = rollouts
        self.overrides = overrides
    }

    /// What the decision knows of the caller's token.
    public struct Token: Sendable {
        /// The version the token was issued for, as the token says it. One that does not parse
        /// (issued before versions were bounded) is covered by every revocation.
        public let version: String?
        /// When the token (or its refresh family) was issued.
        public let issuedAt: Date
        /// The install the token was issued to (its subject: the attested key id, base64url), which
        /// places it in or out of a rollout; nil places it out of every rollout.
        public let install: String?
        /// Whether the install is a development build: a key attested in App Attest's development
        /// environment (an Xcode build), or a debug token (the Simulator, CI). Such installs get a
        /// pattern's `@development` config first (`AppRelease.developmentSuffix`).
        public let development: Bool

        public init(version: String?, issuedAt: Date, install: String? = nil, development: Bool = false) {
            self.version = version
            self.issuedAt = issuedAt
            self.install = install
            self.development = development
        }
    }

    /// What qualifies a pattern for development builds: `2.*@development` is what development
    /// installs at `2.*` get (sandbox keys, a staging backend) instead of `2.*`.
    public static var developmentSuffix: String { "@development" }

    /// Which rule chose the config an install gets, once the pattern is known.
    public enum Decision: Sendable, Equatable {
        /// The pattern's published revision; no rollout in flight.
        case published
        /// A staged rollout (its id, lowercase) placed the install in it (its revision) or out
        /// (the previous one); `mark` is the install's hash in that rollout, to count installs by.
        case rollout(String, included: Bool, mark: UInt64)
        /// A device override: this install was given a chosen revision by name.
        case deviceOverride
    }

    /// What an app at a version gets.
    public enum Resolution: Sendable {
        /// A kill switch covers the version: the app shows `reason`.
        case disabled(reason: String)
        /// An emergency revocation covers the token: the app attests again.
        case revoked
        /// The config for `pattern`, the most specific that covers the version; with `refreshAfter`
        /// seconds while a revocation's forced-refresh window runs, and the rule that chose it.
        case serve(Config, pattern: String, refreshAfter: Int?, decision: Decision)
        /// Nothing published covers the version.
        case noConfig
    }

    /// The decision for an app at `version` holding `token`, at `now`, in this order:
    /// 1. a kill switch covering the version, then an emergency revocation covering the token
    ///    (`AccessRules.verdict`): nothing below can serve past them;
    /// 2. the first pattern of `AppVersion.lookupOrder` that has a config for this install; for a
    ///    development install, the `@development` patterns first, all of them before any other, so
    ///    a development build never gets a production config while a development one covers it;
    /// 3. there, the install's device override, if it has one;
    /// 4. else a rollout in flight: its bucket decides between the new revision and the previous
    ///    one (an install outside it, where the pattern published nothing before, is resolved as
    ///    if the pattern were not there);
    /// 5. else the published revision.
    ///
    /// Inlinable, as is `serving`, so that the caller's module specializes both for its `Config`:
    /// unspecialized, each pattern tried looked up the generic types' metadata (a tenth of
    /// delivery's answer on the hot path).
    @inlinable
    public func resolve(version: AppVersion, token: Token, now: Date) -> Resolution {
        let refreshAfter: Int?
        switch rules.verdict(requestedVersion: version, tokenVersionText: token.version, issuedAt: token.issuedAt, now: now) {
        case .disabled(let reason): return .disabled(reason: reason)
        case .revoked: return .revoked
        case .allowed(let hint): refreshAfter = hint
        }
        // Two loops rather than one over a joined list: no array made per request on the hot path.
        if token.development {
            for pattern in version.lookupOrder {
                if let served = serving(pattern + Self.developmentSuffix, to: token, refreshAfter: refreshAfter) { return served }
            }
        }
        for pattern in version.lookupOrder {
            if let served = serving(pattern, to: token, refreshAfter: refreshAfter) { return served }
        }
        return .noConfig
    }

    /// What `pattern` serves `token` (steps 3 to 5 of `resolve`), or nil when it serves nothing
    /// to this install and the next pattern decides.
    @inlinable
    func serving(_ pattern: String, to token: Token, refreshAfter: Int?) -> Resolution? {
        // Most releases have no override: no lookup per pattern on the hot path then.
        if !overrides.isEmpty, let install = token.install, let pinned = overrides[pattern]?[install] {
            return .serve(pinned, pattern: pattern, refreshAfter: refreshAfter, decision: .deviceOverride)
        }
        guard let config = configs[pattern] else { return nil }
        guard let rollout = rollouts[pattern] else { return .serve(config, pattern: pattern, refreshAfter: refreshAfter, decision: .published) }
        // A token without a subject is outside every rollout (mark 0: counted as one install).
        let (included, mark) = token.install.map { rollout.place(install: $0) } ?? (false, 0)
        if included {
            return .serve(config, pattern: pattern, refreshAfter: refreshAfter, decision: .rollout(rollout.idText, included: true, mark: mark))
        }
        if let previous = rollout.previous {
            return .serve(previous, pattern: pattern, refreshAfter: refreshAfter, decision: .rollout(rollout.idText, included: false, mark: mark))
        }
        return nil
    }
}

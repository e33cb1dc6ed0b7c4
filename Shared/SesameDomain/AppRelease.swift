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

    public init(configs: [String: Config] = [:], rules: AccessRules = AccessRules()) {
        self.configs = configs
        self.rules = rules
    }

    /// What the decision knows of the caller's token.
    public struct Token: Sendable {
        /// The version the token was issued for, as the token says it. One that does not parse
        /// (issued before versions were bounded) is covered by every revocation.
        public let version: String?
        /// When the token (or its refresh family) was issued.
        public let issuedAt: Date

        public init(version: String?, issuedAt: Date) {
            self.version = version
            self.issuedAt = issuedAt
        }
    }

    /// What an app at a version gets.
    public enum Resolution: Sendable {
        /// A kill switch covers the version: the app shows `reason`.
        case disabled(reason: String)
        /// An emergency revocation covers the token: the app attests again.
        case revoked
        /// The config published for `pattern`, the most specific that covers the version; with
        /// `refreshAfter` seconds while a revocation's forced-refresh window runs.
        case serve(Config, pattern: String, refreshAfter: Int?)
        /// Nothing published covers the version.
        case noConfig
    }

    /// The decision for an app at `version` holding `token`, at `now`: a kill switch first, then
    /// a revocation (see `AccessRules.verdict`), then the first published pattern of
    /// `AppVersion.lookupOrder`.
    public func resolve(version: AppVersion, token: Token, now: Date) -> Resolution {
        let refreshAfter: Int?
        switch rules.verdict(requestedVersion: version, tokenVersionText: token.version, issuedAt: token.issuedAt, now: now) {
        case .disabled(let reason): return .disabled(reason: reason)
        case .revoked: return .revoked
        case .allowed(let hint): refreshAfter = hint
        }
        for pattern in version.lookupOrder {
            if let config = configs[pattern] { return .serve(config, pattern: pattern, refreshAfter: refreshAfter) }
        }
        return .noConfig
    }
}

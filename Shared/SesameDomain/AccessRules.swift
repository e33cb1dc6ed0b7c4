import Foundation

/// A kill switch: apps at a version the pattern matches are turned away with `reason`.
public struct KillSwitch: Sendable {
    public let pattern: VersionPattern
    /// What the app shows its user.
    public let reason: String

    public init(pattern: VersionPattern, reason: String) {
        self.pattern = pattern
        self.reason = reason
    }
}

/// An emergency revocation as a rule: tokens issued before `issuedBefore` for a version the pattern matches
/// are refused, and apps re-attest.
public struct RevocationRule: Sendable {
    public let pattern: VersionPattern
    /// Tokens issued before this are refused.
    public let issuedBefore: Date
    /// Until when apps are told to refresh soon.
    public let refreshDeadline: Date?

    public init(pattern: VersionPattern, issuedBefore: Date, refreshDeadline: Date? = nil) {
        self.pattern = pattern
        self.issuedBefore = issuedBefore
        self.refreshDeadline = refreshDeadline
    }

    /// Whether the revocation covers a caller whose token says `tokenVersion` and who now claims
    /// `claimedVersion`. Either one matching is enough: the token's version cannot be escaped by
    /// claiming another, and the claim cannot be escaped by a token of another version. A token
    /// without a version is covered by every revocation (when in doubt, refuse).
    public func covers(tokenVersion: AppVersion?, claimedVersion: AppVersion?) -> Bool {
        guard let tokenVersion else { return true }
        return pattern.matches(tokenVersion) || claimedVersion.map(pattern.matches) == true
    }
}

/// What the kill switches and emergency revocations of one app decide about one request. Every
/// delivery endpoint and auth's refresh ask this one place.
public struct AccessRules: Sendable {
    public var killSwitches: [KillSwitch]
    public var revocations: [RevocationRule]

    public init(killSwitches: [KillSwitch] = [], revocations: [RevocationRule] = []) {
        self.killSwitches = killSwitches
        self.revocations = revocations
    }

    /// Whether there is nothing to decide: no kill switch, no revocation.
    public var isEmpty: Bool { killSwitches.isEmpty && revocations.isEmpty }

    /// The decision.
    public enum Verdict: Sendable, Equatable {
        /// Go ahead; with `refreshAfter` seconds while a revocation's forced-refresh window runs.
        case allowed(refreshAfter: Int?)
        /// A kill switch covers the version: show `reason`.
        case disabled(reason: String)
        /// An emergency revocation covers the token: attest again.
        case revoked
    }

    /// The verdict for a token whose version is `tokenVersionText` as the token says it, parsed only
    /// when there is a rule to apply (the hot path: nothing switched off, nothing revoked, nothing
    /// to parse). A version that does not parse counts as none: covered by every revocation.
    public func verdict(requestedVersion: AppVersion?, tokenVersionText: String?, issuedAt: Date, now: Date) -> Verdict {
        guard !isEmpty else { return .allowed(refreshAfter: nil) }
        return verdict(
            requestedVersion: requestedVersion, tokenVersion: tokenVersionText.flatMap { AppVersion($0) }, issuedAt: issuedAt, now: now)
    }

    /// The verdict for a token issued at `issuedAt` carrying `tokenVersion`, on a request for
    /// `requestedVersion` (nil when the endpoint names none).
    ///
    /// A kill switch stops the version the request names, or else the token's (a `*` switch stops
    /// every caller): an updated app asking for its new version is not held back by the version
    /// its token was issued at. A revocation decides as `RevocationRule.covers` says.
    public func verdict(requestedVersion: AppVersion?, tokenVersion: AppVersion?, issuedAt: Date, now: Date) -> Verdict {
        let runningVersion = requestedVersion ?? tokenVersion
        for killSwitch in killSwitches {
            let pattern = killSwitch.pattern
            if pattern.components.isEmpty || runningVersion.map(pattern.matches) == true {
                return .disabled(reason: killSwitch.reason)
            }
        }
        var refreshAfter: Int?
        for revocation in revocations where revocation.covers(tokenVersion: tokenVersion, claimedVersion: requestedVersion) {
            if issuedAt < revocation.issuedBefore { return .revoked }
            if let deadline = revocation.refreshDeadline, deadline > now {
                refreshAfter = min(refreshAfter ?? .max, max(1, Int(deadline.timeIntervalSince(now).rounded(.up))))
            }
        }
        return .allowed(refreshAfter: refreshAfter)
    }
}

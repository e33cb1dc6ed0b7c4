import Foundation

/// A config revision became the active one for a version pattern.
public struct ConfigPublished: Codable, Sendable, Equatable {
    /// The version pattern (`*`, `2.*`, `2.1.3`, …).
    public var pattern: String
    /// The revision now served for `pattern`.
    public var revision: Int64
    /// Whether the config is an opaque zero-knowledge envelope.
    public var zeroKnowledge: Bool

    public init(pattern: String, revision: Int64, zeroKnowledge: Bool) {
        self.pattern = pattern
        self.revision = revision
        self.zeroKnowledge = zeroKnowledge
    }
}

/// Configs were deleted: the listed patterns are no longer served.
public struct ConfigDeleted: Codable, Sendable, Equatable {
    /// The patterns removed.
    public var patterns: [String]

    public init(patterns: [String]) {
        self.patterns = patterns
    }
}

/// A pattern was rolled back to an earlier revision.
public struct ConfigRolledBack: Codable, Sendable, Equatable {
    /// The version pattern.
    public var pattern: String
    /// The revision now served.
    public var revision: Int64
    /// The revision served before the rollback.
    public var previousRevision: Int64

    public init(pattern: String, revision: Int64, previousRevision: Int64) {
        self.pattern = pattern
        self.revision = revision
        self.previousRevision = previousRevision
    }
}

/// A provisioning key was revoked. Carries the key's id, never the key.
public struct ProvisioningKeyRevoked: Codable, Sendable, Equatable {
    /// The revoked key's id.
    public var keyID: String

    public init(keyID: String) {
        self.keyID = keyID
    }
}

/// A kill switch was set or cleared for some app versions.
public struct KillSwitchChanged: Codable, Sendable, Equatable {
    /// The exact versions affected.
    public var versions: [String]
    /// `false` disables those versions; `true` clears the switch.
    public var enabled: Bool
    /// The reason shown to a disabled app.
    public var reason: String?

    public init(versions: [String], enabled: Bool, reason: String?) {
        self.versions = versions
        self.enabled = enabled
        self.reason = reason
    }
}

/// Tokens issued before `revokedBefore` to apps matching `versionPattern` are no longer accepted.
public struct EmergencyRevocation: Codable, Sendable, Equatable {
    /// The version pattern affected.
    public var versionPattern: String
    /// Tokens issued before this instant are revoked.
    public var revokedBefore: Date
    /// How soon, in seconds, apps should refresh while the revocation is in force.
    public var forceRefreshTTL: Int

    public init(versionPattern: String, revokedBefore: Date, forceRefreshTTL: Int) {
        self.versionPattern = versionPattern
        self.revokedBefore = revokedBefore
        self.forceRefreshTTL = forceRefreshTTL
    }
}

/// An install's tokens were revoked: those of an attested key (no longer refreshed either), or
/// those a debug token was exchanged for.
public struct AttestedKeyRevoked: Codable, Sendable, Equatable {
    /// The tokens' subject: the App Attest key id (base64url), or `debug:<debug token id>`.
    public var keyID: String

    public init(keyID: String) {
        self.keyID = keyID
    }
}

/// The token signing key rotated: verifiers reload the public keys.
public struct SigningKeyRotated: Codable, Sendable, Equatable {
    /// The new key's `kid`.
    public var kid: String

    public init(kid: String) {
        self.kid = kid
    }
}

/// An app's policy changed (identity issuer, user identity mode, quotas): verifiers reload it.
public struct AppPolicyChanged: Codable, Sendable, Equatable {
    /// The policy fields whose value changed.
    public var fields: [String]

    public init(fields: [String]) {
        self.fields = fields
    }
}

/// An app's pin registry changed: a pin added or removed, or its signing key rotated.
public struct PinsChanged: Codable, Sendable, Equatable {
    /// `added`, `removed` or `signing_key_rotated`.
    public var change: String

    public init(change: String) {
        self.change = change
    }
}

import Foundation
import SesameRelayProof

/// An app's security policy, stored as JSON in `apps.policy`. Absent fields take the defaults, so
/// policies written by older versions keep their meaning.
public struct AppPolicy: Codable, Sendable, Equatable {
    /// Whether keys attested in the `development` App Attest environment are accepted; nil leaves
    /// it to the deployment: accepted in development, refused in production.
    public var allowDevelopmentKeys: Bool?
    /// Whether a refresh must carry an App Attest assertion from the attested key.
    public var refreshRequiresAssertion: Bool
    /// How per-user data learns who the user is.
    public var userIdentity: UserIdentityMode
    /// The issuer whose ID tokens prove who the user is (required for `verified` user data).
    public var identityIssuer: IdentityIssuer?
    /// The most user documents the app may store.
    public var userDocumentQuota: Int
    /// Whether debug tokens are exchanged in a production deployment (always in development).
    public var allowDebugTokensInProduction: Bool
    /// Whether a device without App Attest gets `unattested` tokens (`POST /v1/auth/unattested`).
    public var admitUnattested: Bool
    /// The least tier that may download blobs.
    public var blobTier: TrustTier
    /// The least tier that may read and write per-user data.
    public var userDataTier: TrustTier
    /// The audiences of the app's own APIs that may ask Sesame for API tokens
    /// (`POST /v1/auth/api-token`), such as `https://api.example.com`; none by default.
    public var apiAudiences: [String]
    /// The changes that need a second person's approval before they apply (two-person rule).
    public var requireApproval: [GuardedChange]
    /// The DeviceCheck bit (0 or 1) that marks a banned device; nil: bans are off. When set, an attest
    /// must carry the device's DeviceCheck token, and a device whose bit is set is refused whatever key
    /// it makes. Apple keeps the bits per team, across its apps: every app of a team uses the same bit.
    public var deviceBanBit: Int?
    /// The highest risk metric (Apple's approximate count of App Attest keys the device made for the
    /// app) an install may have; one above it is revoked when Apple reports it. Nil: no limit.
    public var maxRiskMetric: Int?
    /// The share of new installs, in percent, that attest with App Attest; the others use the
    /// `unattested` tier (so `admitUnattested` must be on below 100). Nil: every install attests.
    /// Apple rate-limits attestations per app: a large install base starts small and widens.
    public var attestationRamp: Double?
    /// Whether auth widens the ramp by itself: from `attestationRamp`, doubled at most once a day while
    /// the last day's attestations succeeded at 95 % or more and Apple's rate limits were not reported
    /// (`docs/fraud-signals.md`); it stops at 100. Changing `attestationRamp` starts it again there.
    public var attestationRampAutomatic: Bool

    /// The quota when the policy names none.
    public static let defaultUserDocumentQuota = 100_000

    public init(
        allowDevelopmentKeys: Bool? = nil, refreshRequiresAssertion: Bool = true, userIdentity: UserIdentityMode = .verified,
        identityIssuer: IdentityIssuer? = nil, userDocumentQuota: Int = AppPolicy.defaultUserDocumentQuota,
        allowDebugTokensInProduction: Bool = false, admitUnattested: Bool = false, blobTier: TrustTier = .attested,
        userDataTier: TrustTier = .attested, apiAudiences: [String] = [], requireApproval: [GuardedChange] = [],
        deviceBanBit: Int? = nil, maxRiskMetric: Int? = nil, attestationRamp: Double? = nil,
        attestationRampAutomatic: Bool = false
    ) {
        self.allowDevelopmentKeys = allowDevelopmentKeys
        self.refreshRequiresAssertion = refreshRequiresAssertion
        self.userIdentity = userIdentity
        self.identityIssuer = identityIssuer
        self.userDocumentQuota = userDocumentQuota
        self.allowDebugTokensInProduction = allowDebugTokensInProduction
        self.admitUnattested = admitUnattested
        self.blobTier = blobTier
        self.userDataTier = userDataTier
        self.apiAudiences = apiAudiences
        self.requireApproval = requireApproval
        self.deviceBanBit = deviceBanBit
        self.maxRiskMetric = maxRiskMetric
        self.attestationRamp = attestationRamp
        self.attestationRampAutomatic = attestationRampAutomatic
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let defaults = AppPolicy()
        allowDevelopmentKeys = try container.decodeIfPresent(Bool.self, forKey: .allowDevelopmentKeys)
        refreshRequiresAssertion =
            try container.decodeIfPresent(Bool.self, forKey: .refreshRequiresAssertion) ?? defaults.refreshRequiresAssertion
        userIdentity = try container.decodeIfPresent(UserIdentityMode.self, forKey: .userIdentity) ?? defaults.userIdentity
        identityIssuer = try container.decodeIfPresent(IdentityIssuer.self, forKey: .identityIssuer)
        userDocumentQuota = try container.decodeIfPresent(Int.self, forKey: .userDocumentQuota) ?? defaults.userDocumentQuota
        allowDebugTokensInProduction =
            try container.decodeIfPresent(Bool.self, forKey: .allowDebugTokensInProduction) ?? defaults.allowDebugTokensInProduction
        admitUnattested = try container.decodeIfPresent(Bool.self, forKey: .admitUnattested) ?? defaults.admitUnattested
        blobTier = try container.decodeIfPresent(TrustTier.self, forKey: .blobTier) ?? defaults.blobTier
        userDataTier = try container.decodeIfPresent(TrustTier.self, forKey: .userDataTier) ?? defaults.userDataTier
        apiAudiences = try container.decodeIfPresent([String].self, forKey: .apiAudiences) ?? defaults.apiAudiences
        requireApproval = try container.decodeIfPresent([GuardedChange].self, forKey: .requireApproval) ?? defaults.requireApproval
        deviceBanBit = try container.decodeIfPresent(Int.self, forKey: .deviceBanBit)
        maxRiskMetric = try container.decodeIfPresent(Int.self, forKey: .maxRiskMetric)
        attestationRamp = try container.decodeIfPresent(Double.self, forKey: .attestationRamp)
        attestationRampAutomatic = try container.decodeIfPresent(Bool.self, forKey: .attestationRampAutomatic) ?? false
    }

    /// The policy stored as `json` (the `apps.policy` column, read as text).
    public init(storedJSON json: String) throws {
        self = try JSONDecoder().decode(AppPolicy.self, from: Data(json.utf8))
    }

    /// The JSON to store in `apps.policy`.
    public func storedJSON() throws -> String {
        String(decoding: try JSONEncoder().encode(self), as: UTF8.self)
    }

    /// Whether development keys are accepted, in a deployment that is `production` or not.
    public func allowsDevelopmentKeys(inProduction production: Bool) -> Bool {
        allowDevelopmentKeys ?? !production
    }

    /// Whether debug tokens are exchanged, in a deployment that is `production` or not.
    public func allowsDebugTokens(inProduction production: Bool) -> Bool {
        !production || allowDebugTokensInProduction
    }
}

/// How per-user data learns who the user is. App Attest proves the app, never the user.
public enum UserIdentityMode: String, Codable, Sendable, Equatable {
    /// The request carries an ID token from the policy's `identityIssuer`; the document is keyed by
    /// its verified `sub`.
    case verified
    /// The request names the user in `X-Sesame-User-Id`, unproven: any install of the app can read
    /// and overwrite any user's document. Only for apps whose per-user data is not sensitive.
    case unverified
}

/// An issuer of ID tokens the app trusts to say who its user is: Sign in with Apple, or the app's
/// own backend.
public struct IdentityIssuer: Codable, Sendable, Hashable {
    /// The exact `iss` its tokens carry (`https://appleid.apple.com` for Sign in with Apple).
    public var issuer: String
    /// The `aud` values accepted (for Sign in with Apple, the app's bundle id).
    public var audiences: [String]
    /// Where its JSON Web Key Set is published (https; http only for loopback in development).
    public var jwksURL: String?
    /// Or its public keys, PEM.
    public var publicKeysPEM: String?

    /// Sign in with Apple's issuer, for an app with bundle id `bundleID`.
    public static func signInWithApple(bundleID: String) -> IdentityIssuer {
        IdentityIssuer(issuer: "https://appleid.apple.com", audiences: [bundleID], jwksURL: "https://appleid.apple.com/auth/keys")
    }

    public init(issuer: String, audiences: [String], jwksURL: String? = nil, publicKeysPEM: String? = nil) {
        self.issuer = issuer
        self.audiences = audiences
        self.jwksURL = jwksURL
        self.publicKeysPEM = publicKeysPEM
    }
}

/// The audience of an app's own API in its API tokens' `aud`.
public enum APIAudience {
    /// The audiences of Sesame's own tokens (access and refresh): an API token made for one of
    /// them would pass where only those may.
    public static let reserved: Set<String> = ["sesame-api", "sesame-refresh"]

    /// 1 to 256 printable ASCII characters without spaces, such as `https://api.example.com`, and
    /// none of Sesame's own (nor a relay's).
    public static func isValid(_ audience: String) -> Bool {
        (1...256).contains(audience.utf8.count) && audience.utf8.allSatisfy { (0x21...0x7E).contains($0) } && !reserved.contains(audience)
            && !isRelay(audience)
    }

    /// Whether `audience` is a relay's (`sesame-relay:{name}`): single-use tokens an install asks
    /// for to prove a relay call, which the app's policy never lists and a backend never accepts.
    public static func isRelay(_ audience: String) -> Bool {
        audience.hasPrefix(RelayCallStatement.audiencePrefix)
    }

    /// Whether `audience` is the audience of a relay the app may have: the prefix and a valid relay name.
    public static func isRelayAudience(_ audience: String) -> Bool {
        isRelay(audience) && RelayRules.isValidName(String(audience.dropFirst(RelayCallStatement.audiencePrefix.count)))
    }
}

/// A kind of change an app's policy can put under the two-person rule: proposed by one person or
/// key, applied only when another approves it.
public enum GuardedChange: String, Codable, Sendable, CaseIterable {
    /// Uploading a config (`config/upload`).
    case publish
    /// Republishing an earlier revision (`config/rollback`).
    case rollback
    /// Switching versions off or on (`kill-switch`).
    case killSwitch = "kill_switch"
    /// An emergency revocation, or revoking one device.
    case revocation
    /// Changing this policy.
    case policy
    /// Attaching or detaching a config schema.
    case schema
    /// Making, changing or removing an attested relay (its upstream, rules and injected headers).
    case relay
    /// Setting or removing the app's DeviceCheck key (`apple/credentials`): it decides which
    /// devices Apple's bits ban, and whose receipts are traded.
    case appleKey = "apple_key"
    /// Adding or removing a certificate pin (`pins`): a wrong pin cuts every install off its API.
    case pins
}

import Foundation
import SesameJSON

/// How much Sesame trusts the install behind a token, from least to most. Only auth decides it and
/// writes it into the access token's `tier` claim; delivery trusts only the claim.
public enum TrustTier: String, Codable, Sendable, CaseIterable, Comparable {
    /// An install that could not prove anything: a device without App Attest, admitted because the
    /// app's policy says `admitUnattested`.
    case unattested
    /// A Simulator, a CI job or a developer's device holding a debug token a provisioning key made.
    case debug
    /// App Attest proved the app genuine on a real Apple device.
    case attested

    private var rank: Int {
        switch self {
        case .unattested: 0
        case .debug: 1
        case .attested: 2
        }
    }

    public static func < (lhs: TrustTier, rhs: TrustTier) -> Bool { lhs.rank < rhs.rank }

    /// Whether a caller of this tier may see what needs `required`.
    public func satisfies(_ required: TrustTier) -> Bool { self >= required }
}

/// Which tier each top-level key of a config needs: a key not named needs `attested`, so a config
/// uploaded without tiers is attested-only, as every config was before tiers existed.
public struct ConfigTiers: Codable, Sendable, Hashable {
    /// Top-level key → the least tier that may see it.
    public var required: [String: TrustTier]

    public init(_ required: [String: TrustTier] = [:]) {
        self.required = required
    }

    public init(from decoder: any Decoder) throws {
        required = try decoder.singleValueContainer().decode([String: TrustTier].self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(required)
    }

    /// The tiers stored as `json` (`config_revisions.tiers`, read as text).
    public init(storedJSON json: String) throws {
        self = try JSONDecoder().decode(ConfigTiers.self, from: Data(json.utf8))
    }

    /// The JSON to store in `config_revisions.tiers`.
    public func storedJSON() throws -> String {
        String(decoding: try JSONEncoder().encode(self), as: UTF8.self)
    }

    /// The tier `key` needs.
    public func tier(of key: String) -> TrustTier { required[key] ?? .attested }

    /// Whether every key needs `attested` (nothing is ever withheld from an attested caller).
    public var isAttestedOnly: Bool { required.values.allSatisfy { $0 == .attested } }

    /// `object` as a caller of `tier` may see it, and the top-level keys withheld from it (sorted).
    public func visible(_ object: [String: JSONValue], to tier: TrustTier) -> (visible: [String: JSONValue], withheld: [String]) {
        var visible: [String: JSONValue] = [:]
        var withheld: [String] = []
        for (key, value) in object {
            if tier.satisfies(self.tier(of: key)) { visible[key] = value } else { withheld.append(key) }
        }
        return (visible, withheld.sorted())
    }
}

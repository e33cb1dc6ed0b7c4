/// An app's security policy, stored as JSON in `apps.policy`. Absent fields take the defaults, so
/// policies written by older versions keep their meaning.
public struct AppPolicy: Codable, Sendable, Equatable {
    /// Whether keys attested in the `development` App Attest environment are accepted.
    public var allowDevelopmentKeys: Bool
    /// Whether a refresh must carry an App Attest assertion from the attested key.
    public var refreshRequiresAssertion: Bool

    public init(allowDevelopmentKeys: Bool = true, refreshRequiresAssertion: Bool = true) {
        self.allowDevelopmentKeys = allowDevelopmentKeys
        self.refreshRequiresAssertion = refreshRequiresAssertion
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let defaults = AppPolicy()
        allowDevelopmentKeys = try container.decodeIfPresent(Bool.self, forKey: .allowDevelopmentKeys) ?? defaults.allowDevelopmentKeys
        refreshRequiresAssertion =
            try container.decodeIfPresent(Bool.self, forKey: .refreshRequiresAssertion) ?? defaults.refreshRequiresAssertion
    }
}

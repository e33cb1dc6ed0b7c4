/// Every event Sesame's services exchange, one case each; `type` is its name on the wire.
public enum SesameEvent: Sendable, Equatable {
    case configPublished(ConfigPublished)
    case configDeleted(ConfigDeleted)
    case configRolledBack(ConfigRolledBack)
    case provisioningKeyRevoked(ProvisioningKeyRevoked)
    case killSwitchChanged(KillSwitchChanged)
    case emergencyRevocation(EmergencyRevocation)
    case attestedKeyRevoked(AttestedKeyRevoked)
    case signingKeyRotated(SigningKeyRotated)
    case appPolicyChanged(AppPolicyChanged)
    case pinsChanged(PinsChanged)

    /// The stable name written as `type` in the JSON.
    public var type: String {
        switch self {
        case .configPublished: "config.published"
        case .configDeleted: "config.deleted"
        case .configRolledBack: "config.rolled_back"
        case .provisioningKeyRevoked: "provisioning_key.revoked"
        case .killSwitchChanged: "kill_switch.changed"
        case .emergencyRevocation: "emergency_revocation"
        case .attestedKeyRevoked: "attested_key.revoked"
        case .signingKeyRotated: "signing_key.rotated"
        case .appPolicyChanged: "app_policy.changed"
        case .pinsChanged: "pins.changed"
        }
    }

    /// The topic the event travels on.
    public var topic: String {
        switch self {
        case .configPublished, .configDeleted, .configRolledBack, .pinsChanged: EventTopic.configChanges
        case .provisioningKeyRevoked, .killSwitchChanged, .emergencyRevocation, .attestedKeyRevoked, .signingKeyRotated, .appPolicyChanged:
            EventTopic.revocations
        }
    }
}

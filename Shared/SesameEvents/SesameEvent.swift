/// Every event Sesame's services exchange, one case each; `type` is its name on the wire.
///
/// Consumers act on two facts only, so there are two events: something delivery serves for an app
/// changed (delivery reloads that app from PostgreSQL), and the token signing key rotated
/// (verifiers reload the public keys). `app.changed` is written by the database itself, in the
/// transaction that made the change (migration 13, `app_changes_note`), so no writer can forget it.
public enum SesameEvent: Sendable, Equatable {
    /// Something delivery serves for the envelope's app changed: a config, the policy, a kill
    /// switch, an emergency revocation, a revoked device or debug token, the pins.
    case appChanged
    case signingKeyRotated(SigningKeyRotated)

    /// The stable name written as `type` in the JSON.
    public var type: String {
        switch self {
        case .appChanged: Self.appChangedType
        case .signingKeyRotated: "signing_key.rotated"
        }
    }

    /// `app.changed`, as the database writes it too.
    public static let appChangedType = "app.changed"

    /// The types earlier versions published for one app's changes, each with what delivery read
    /// of it (the app id): read as `app.changed`, so events already in a topic when a deployment
    /// is upgraded still reach delivery.
    static let formerAppChangeTypes: Set<String> = [
        "config.published", "config.deleted", "config.rolled_back", "provisioning_key.revoked", "kill_switch.changed",
        "emergency_revocation", "attested_key.revoked", "app_policy.changed", "pins.changed",
    ]

    /// The topic the event travels on.
    public var topic: String {
        switch self {
        case .appChanged: EventTopic.configChanges
        case .signingKeyRotated: EventTopic.revocations
        }
    }
}

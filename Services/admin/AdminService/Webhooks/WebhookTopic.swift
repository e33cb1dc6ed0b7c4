import SesameStorage

/// The events a webhook may subscribe to (`events` when it is made), each the audit actions of one
/// kind of change. Which event an action is, or that it is none, is decided for every action here
/// (an exhaustive switch), so a new action cannot be forgotten; the management API's document lists
/// the same events (`OpenAPIContractTests`).
enum WebhookTopic: String, CaseIterable, Sendable {
    case configPublished = "config.published"
    case configRolledBack = "config.rolled_back"
    case configRollout = "config.rollout"
    case configDeleted = "config.deleted"
    case configOverride = "config.override"
    case configSchema = "config.schema"
    case killSwitch = "kill_switch"
    case revocation
    case keyCreated = "key.created"
    case keyRevoked = "key.revoked"
    case policyChanged = "policy.changed"
    case webhookChanged = "webhook.changed"
    case relayChanged = "relay.changed"
    case pinsChanged = "pins.changed"
    case accountChanged = "account.changed"
    case approvalRequested = "approval.requested"
    case approvalDecided = "approval.decided"

    /// The event `action` is; nil for what is never sent (reads, debug-token uses).
    init?(action: AuditAction) {
        switch action {
        case .configUpload: self = .configPublished
        case .configRollback, .configRolloutRollback: self = .configRolledBack
        case .configRolloutStart, .configRolloutWiden, .configRolloutPause, .configRolloutResume, .configRolloutComplete: self = .configRollout
        case .configDelete: self = .configDeleted
        case .configOverrideSet, .configOverrideRemove: self = .configOverride
        case .configSchemaSet, .configSchemaRemove: self = .configSchema
        case .killSwitchSet, .killSwitchClear: self = .killSwitch
        case .emergencyRevoke, .deviceRevoke, .deviceBan, .deviceUnban, .deviceRiskRevoke, .deviceBanRevoke: self = .revocation
        case .keyCreate, .backendKeyCreate, .appleCredentialsSet: self = .keyCreated
        case .keyRevoke, .backendKeyRevoke, .appleCredentialsRemove: self = .keyRevoked
        case .policySet, .attestationRampWiden: self = .policyChanged
        case .webhookCreate, .webhookRemove: self = .webhookChanged
        case .relaySet, .relayRemove: self = .relayChanged
        // A pin decides which servers every install will talk to: its owners hear of each change.
        case .pinAdd, .pinRemove, .pinPrepareSigningKey, .pinRotateSigningKey: self = .pinsChanged
        case .accountInvite, .accountJoin, .accountRole, .accountRemove, .accountPasskeyAdd, .accountPasskeyRevoke, .accountSessionsEnd,
            .accountInvitationCancel:
            self = .accountChanged
        case .changePropose: self = .approvalRequested
        case .changeApprove, .changeReject, .changeBreakGlass: self = .approvalDecided
        case .configRead, .changeRead, .debugTokenCreate, .debugTokenRevoke, .debugTokenUse, .blobUpload:
            return nil
        }
    }
}

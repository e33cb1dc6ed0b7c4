/// The Kafka topics Sesame's services talk over. Both are keyed by app id, so one app's events
/// stay in order; every service reads them as broadcast consumers (each instance sees every event).
public enum EventTopic {
    /// Config revisions published, deleted or rolled back. Key: app id. (The topic keeps the name
    /// it was first deployed with: renaming it would strand events in the old one.)
    public static let configChanges = "sesame.config.published"
    /// Provisioning keys, kill switches, emergency revocations, attested keys and signing keys.
    /// Key: app id.
    public static let revocations = "sesame.revocations"
    /// Every topic, for creating them at start.
    public static let all = [configChanges, revocations]
}

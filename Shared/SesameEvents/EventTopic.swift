/// The Kafka topics Sesame's services talk over. Both are keyed by app id, so one app's events
/// stay in order; every service reads them as broadcast consumers (each instance sees every event).
public enum EventTopic {
    /// `app.changed`. Key: app id. (The topic keeps the name it was first deployed with, when it
    /// carried config events only: renaming it would strand events in the old one.)
    public static let configChanges = "sesame.config.published"
    /// `signing_key.rotated`, which auth and delivery read. Key: `_global`.
    public static let revocations = "sesame.revocations"
    /// Every topic, for creating them at start.
    public static let all = [configChanges, revocations]
}

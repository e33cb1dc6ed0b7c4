/// The Kafka topics Sesame's services talk over (design.md, "Events").
public enum EventTopic {
    /// Config revisions published, deleted or rolled back. Key: app id.
    public static let configPublished = "sesame.config.published"
    /// Provisioning keys, kill switches, emergency revocations, attested keys and signing keys.
    /// Key: app id.
    public static let revocations = "sesame.revocations"
    /// Every topic, for creating them at start.
    public static let all = [configPublished, revocations]
}

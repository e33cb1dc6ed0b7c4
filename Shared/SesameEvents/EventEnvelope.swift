import Foundation

/// An event with what every event carries: a unique id (consumers drop repeats by it), the app it
/// concerns, and when it happened.
public struct EventEnvelope: Sendable, Equatable {
    /// The major version of the JSON layout this build writes and reads. Minor changes only add
    /// fields, which older readers ignore; a new major version is refused by older readers.
    public static let majorVersion = 1
    /// The Kafka key of events that concern no single app (signing key rotation).
    public static let globalKey = "_global"

    /// Unique per event.
    public var id: UUID
    /// The app the event concerns (`TEAMID.bundle.id`), or nil for events about every app.
    public var appID: String?
    /// When the state change happened.
    public var occurredAt: Date
    /// What happened.
    public var event: SesameEvent
    /// The W3C trace context the event travelled with (Kafka headers, not the JSON): the span that
    /// published it, for the consumer's span to continue. Empty when it was not traced.
    public var traceHeaders: [String: String] = [:]

    /// Creates an envelope; `id` and `occurredAt` default to new values.
    public init(id: UUID = UUID(), appID: String?, occurredAt: Date = Date(), event: SesameEvent) {
        self.id = id
        self.appID = appID
        self.occurredAt = occurredAt
        self.event = event
    }

    /// The Kafka topic.
    public var topic: String { event.topic }
    /// The Kafka key: the app id, so one app's events stay in order on one partition.
    public var partitionKey: String { appID ?? Self.globalKey }
}

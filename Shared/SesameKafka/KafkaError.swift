/// What can go wrong talking to Kafka. Messages are for operators; none contains message contents.
public struct KafkaError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable machine-readable kind.
    public enum Kind: String, Sendable {
        /// A librdkafka property was refused.
        case configuration
        /// The client could not be created.
        case clientCreation
        /// The broker did not acknowledge the message in time, or refused it.
        case deliveryFailed
        /// The local queue is full; try again later.
        case queueFull
        /// The client is shutting down and takes no more work.
        case shutDown
        /// A metadata or admin request failed.
        case request
    }

    /// What went wrong.
    public var kind: Kind
    /// A human-readable explanation (from librdkafka where it has one).
    public var message: String

    /// Creates an error.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { "kafka \(kind.rawValue): \(message)" }
}

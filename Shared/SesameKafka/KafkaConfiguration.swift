import SesameConfiguration

/// How a Sesame process talks to Kafka: the brokers, and the few settings worth changing.
public struct KafkaConfiguration: Sendable {
    /// Bootstrap servers, `host:port`.
    public var brokers: [String]
    /// Identifies this process in broker logs and in the consumer group name.
    public var clientID: String
    /// How long the producer keeps retrying one message before reporting it failed.
    /// The outbox relay retries later anyway, so this only bounds one attempt.
    public var messageTimeout: Duration
    /// How long a graceful shutdown waits for in-flight messages to be acknowledged.
    public var flushTimeout: Duration
    /// How long the producer waits to batch messages; a trade of latency for throughput.
    public var linger: Duration
    /// How long one poll of librdkafka blocks its own thread waiting for events.
    /// Events are returned as soon as they arrive; this only bounds how fast a stop is noticed.
    public var pollTimeout: Duration
    /// Whether the producer uses Kafka's idempotent delivery (no duplicates from retries, order
    /// kept with several requests in flight). Turn it off only for a broker that forgets producer
    /// ids on restart, such as Tansu with in-memory storage: there an idempotent producer never
    /// recovers. Without it, one request is in flight at a time, so order is still kept; a retry may
    /// duplicate a message, which consumers drop by event id.
    public var idempotentDelivery: Bool
    /// How many read messages a broadcast consumer holds for a caller that has not taken them.
    /// Beyond it, messages are dropped and the consumer asks the caller to catch up from its
    /// source of truth (`reconnections`), so a slow caller costs a resync, never unbounded memory.
    public var consumerBufferCapacity: Int
    /// Extra librdkafka properties, applied last (for example `security.protocol`).
    public var extraProperties: [String: String]

    /// Creates a configuration; the defaults suit a local broker.
    public init(
        brokers: [String],
        clientID: String = "sesame",
        messageTimeout: Duration = .seconds(10),
        flushTimeout: Duration = .seconds(10),
        linger: Duration = .milliseconds(2),
        pollTimeout: Duration = .milliseconds(100),
        idempotentDelivery: Bool = true,
        consumerBufferCapacity: Int = 10_000,
        extraProperties: [String: String] = [:]
    ) {
        self.brokers = brokers
        self.clientID = clientID
        self.messageTimeout = messageTimeout
        self.flushTimeout = flushTimeout
        self.linger = linger
        self.pollTimeout = pollTimeout
        self.idempotentDelivery = idempotentDelivery
        self.consumerBufferCapacity = consumerBufferCapacity
        self.extraProperties = extraProperties
    }

    /// Properties every client shares.
    var commonProperties: [String: String] {
        [
            "bootstrap.servers": brokers.joined(separator: ","),
            "client.id": clientID,
            // Reconnect quickly after a broker restart, but back off to avoid a storm of attempts.
            "reconnect.backoff.ms": "100",
            "reconnect.backoff.max.ms": "2000",
            "log.connection.close": "false",
        ]
    }

    /// Producer properties: acknowledged by all in-sync replicas, order kept per partition, keyed
    /// partitioning compatible with the Java client so one app's events always land on one partition.
    var producerProperties: [String: String] {
        let ordering: [String: String] =
            idempotentDelivery
            ? ["enable.idempotence": "true"]
            : ["enable.idempotence": "false", "max.in.flight.requests.per.connection": "1"]
        return commonProperties.merging(ordering) { $1 }.merging([
            "acks": "all",
            "message.timeout.ms": String(messageTimeout.inMilliseconds),
            "linger.ms": String(linger.inMilliseconds),
            "partitioner": "murmur2_random",
        ]) { $1 }.merging(extraProperties) { $1 }
    }

    /// Consumer properties for a broadcast consumer: a group id of its own, never committing,
    /// and starting over from the earliest retained offset if its position no longer exists.
    func consumerProperties(groupID: String) -> [String: String] {
        commonProperties.merging([
            "group.id": groupID,
            "enable.auto.commit": "false",
            "enable.auto.offset.store": "false",
            "auto.offset.reset": "earliest",
            "enable.partition.eof": "false",
            "fetch.wait.max.ms": "100",
        ]) { $1 }.merging(extraProperties) { $1 }
    }
}

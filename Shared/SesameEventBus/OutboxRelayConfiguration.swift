/// How the outbox relay paces itself.
public struct OutboxRelayConfiguration: Sendable {
    /// The most rows published in one transaction.
    public var batchSize: Int
    /// How long the relay sleeps when the outbox is empty: the main term of end-to-end latency.
    public var pollInterval: Duration
    /// The first wait after a failure (Kafka or PostgreSQL down); doubled each time, up to `maxRetryBackoff`.
    public var retryBackoff: Duration
    /// The longest wait between attempts while something is down.
    public var maxRetryBackoff: Duration
    /// How long published rows are kept (for inspection) before they are deleted.
    public var retention: Duration
    /// How often published rows past their retention are deleted.
    public var pruneInterval: Duration
    /// Partitions for topics the relay creates at start.
    public var topicPartitions: Int
    /// The longest one database step (a batch, including waiting for Kafka's acknowledgements)
    /// may take before it is abandoned and retried. Keep it above the producer's message timeout.
    public var stepTimeout: Duration

    /// Creates a configuration; the defaults keep latency low at a few queries per second when idle.
    public init(
        batchSize: Int = 500,
        pollInterval: Duration = .milliseconds(50),
        retryBackoff: Duration = .milliseconds(200),
        maxRetryBackoff: Duration = .seconds(5),
        retention: Duration = .seconds(7 * 24 * 3600),
        pruneInterval: Duration = .seconds(60),
        topicPartitions: Int = 3,
        stepTimeout: Duration = .seconds(30)
    ) {
        self.batchSize = batchSize
        self.pollInterval = pollInterval
        self.retryBackoff = retryBackoff
        self.maxRetryBackoff = maxRetryBackoff
        self.retention = retention
        self.pruneInterval = pruneInterval
        self.topicPartitions = topicPartitions
        self.stepTimeout = stepTimeout
    }
}

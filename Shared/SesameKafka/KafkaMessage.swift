/// One message read from Kafka, copied out of librdkafka's memory.
public struct KafkaMessage: Sendable, Equatable {
    /// The topic it was read from.
    public var topic: String
    /// The partition it was read from.
    public var partition: Int32
    /// Its offset in that partition.
    public var offset: Int64
    /// Its key, if any.
    public var key: [UInt8]?
    /// Its payload.
    public var value: [UInt8]
    /// Its headers named in `readHeaders` (the W3C trace context); any other header is not read.
    public var headers: [String: String]

    /// The headers a consumer reads: those that carry a trace (`traceparent`, `tracestate`).
    public static let readHeaders: Set<String> = ["traceparent", "tracestate"]

    /// Creates a message (consumers create these; tests may too).
    public init(topic: String, partition: Int32, offset: Int64, key: [UInt8]?, value: [UInt8], headers: [String: String] = [:]) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.key = key
        self.value = value
        self.headers = headers
    }
}

/// Where the broker stored an acknowledged message.
public struct KafkaDeliveryReceipt: Sendable, Equatable {
    /// The partition the message was written to.
    public var partition: Int32
    /// Its offset there.
    public var offset: Int64
}

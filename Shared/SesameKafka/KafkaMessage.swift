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

    /// Creates a message (consumers create these; tests may too).
    public init(topic: String, partition: Int32, offset: Int64, key: [UInt8]?, value: [UInt8]) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.key = key
        self.value = value
    }
}

/// Where the broker stored an acknowledged message.
public struct KafkaDeliveryReceipt: Sendable, Equatable {
    /// The partition the message was written to.
    public var partition: Int32
    /// Its offset there.
    public var offset: Int64
}

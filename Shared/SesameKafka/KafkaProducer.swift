import Logging
import Metrics
import ServiceLifecycle
import SesameConfiguration
import Synchronization

/// An idempotent Kafka producer whose `send` returns only once the broker acknowledged the message.
///
/// Run it as a `Service`: `run()` polls librdkafka on a dedicated thread, and on graceful shutdown
/// stops taking new messages, flushes what is in flight (up to `flushTimeout`) and fails whatever
/// is left, so every caller learns what became of its message.
public final class KafkaProducer: Service, Sendable {
    private let client: RdKafkaClient
    private let deliveryReports: DeliveryReportRegistry
    private let configuration: KafkaConfiguration
    private let logger: Logger
    private let acceptsMessages = Atomic<Bool>(true)
    private let stopPolling = OneWayFlag()
    private let sendLatency = Timer(label: "sesame_kafka_produce_duration")

    /// Creates a producer; nothing connects until the first message or `run()`.
    public init(configuration: KafkaConfiguration, logger: Logger) throws(KafkaError) {
        let registry = DeliveryReportRegistry()
        self.client = try RdKafkaClient(kind: .producer, properties: configuration.producerProperties, deliveryReports: registry)
        self.deliveryReports = registry
        self.configuration = configuration
        self.logger = logger
    }

    /// Sends one message and waits for the broker's acknowledgement.
    ///
    /// Messages with the same `key` go to the same partition, in the order they were sent.
    /// Cancelling the calling task does not recall a message already handed to librdkafka; the call
    /// still ends within the configured message timeout.
    @discardableResult
    public func send(topic: String, key: String, value: [UInt8]) async throws(KafkaError) -> KafkaDeliveryReceipt {
        try await send(batch: [KafkaOutgoingMessage(topic: topic, key: key, value: value)])[0].get()
    }

    /// Sends messages in order and waits until each is acknowledged or failed; one result per message.
    ///
    /// Order is kept per key: once a message cannot be handed to librdkafka, the ones after it are
    /// not sent either (they fail with the same error), so a later message never overtakes it.
    public func send(batch: [KafkaOutgoingMessage]) async -> [KafkaDeliveryResult] {
        guard !batch.isEmpty else { return [] }
        guard acceptsMessages.load(ordering: .acquiring) else {
            return batch.map { _ in .failure(KafkaError(.shutDown, "the producer is shutting down")) }
        }
        let started = ContinuousClock.now
        let client = self.client
        let registry = self.deliveryReports
        let results = await withCheckedContinuation { continuation in
            let collector = BatchDeliveryResults(count: batch.count, continuation: continuation)
            var refusal: KafkaError?
            for (index, message) in batch.enumerated() {
                if let refusal {
                    collector.record(.failure(refusal), at: index)
                    continue
                }
                let id = registry.register { collector.record($0, at: index) }
                if let error = client.produce(
                    topic: message.topic, key: Array(message.key.utf8), value: message.value, headers: message.headers, opaqueID: id)
                {
                    registry.complete(id, with: .failure(error))
                    refusal = error
                }
            }
        }
        sendLatency.recordNanoseconds((ContinuousClock.now - started).inNanoseconds)
        return results
    }

    /// Polls for delivery reports until graceful shutdown, then flushes and fails what is left.
    public func run() async throws {
        let client = self.client
        let stopPolling = self.stopPolling
        let pollMilliseconds = configuration.pollTimeout.inMilliseconds
        let flushMilliseconds = configuration.flushTimeout.inMilliseconds
        async let unflushed = DedicatedThread.run(name: "sesame-kafka-producer") {
            while !stopPolling.isRaised {
                client.poll(milliseconds: pollMilliseconds)
            }
            return client.flush(milliseconds: flushMilliseconds)
        }
        // Returns on graceful shutdown, or throws on cancellation: both mean stop.
        try? await gracefulShutdown()
        acceptsMessages.store(false, ordering: .releasing)
        stopPolling.raise()
        let remaining = await unflushed
        if remaining > 0 {
            logger.warning("kafka producer stopped with unacknowledged messages", metadata: ["kafka.unacknowledged": "\(remaining)"])
        }
        // Close first: once closed, no new message can slip in, so failing the waiters left is final.
        await DedicatedThread.run(name: "sesame-kafka-producer-close") { client.close() }
        deliveryReports.failAll(with: KafkaError(.shutDown, "the producer stopped before the broker acknowledged"))
    }
}

/// One message to send.
public struct KafkaOutgoingMessage: Sendable {
    /// The topic.
    public var topic: String
    /// The partitioning key: messages with one key keep their order.
    public var key: String
    /// The payload.
    public var value: [UInt8]
    /// Headers (the W3C trace context of the span that sent it).
    public var headers: [String: String]

    /// Creates a message.
    public init(topic: String, key: String, value: [UInt8], headers: [String: String] = [:]) {
        self.topic = topic
        self.key = key
        self.value = value
        self.headers = headers
    }
}

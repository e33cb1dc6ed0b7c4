import ServiceLifecycle
import SesameKafka
import SesameTestSupport
import Testing

/// A canary for a defect of the development broker: it passes while the defect is there and fails,
/// naming its page, once an update of Tansu (or of librdkafka) no longer shows it.
@Suite("Tansu's known defects", .timeLimit(.minutes(2)))
struct TansuDefectTests {
    static let page = "docs/upstream/tansu-acknowledges-unknown-topic.md"

    @Test("a restarted Tansu still acknowledges a send to a topic it lost, and keeps nothing")
    func acknowledgesSendToLostTopic() async throws {
        let broker = try TansuBroker()
        let configuration = KafkaConfiguration(
            brokers: broker.brokers, clientID: "tansu-canary", messageTimeout: .seconds(10), idempotentDelivery: false)
        let (published, lost) = (TestKafka.uniqueTopic("published"), TestKafka.uniqueTopic("lost"))
        let administrator = KafkaTopicAdministrator(configuration: configuration)
        try await administrator.ensureTopics([published, lost], partitions: 3)
        let producer = try KafkaProducer(configuration: configuration, logger: testLogger)
        try await withRunningServices([producer]) {
            // librdkafka learns every topic from its first, full, metadata request; it is sent
            // to `lost` only after the restart, so it asks the broker nothing about it first.
            try await Task.sleep(for: .seconds(1))
            _ = try await producer.send(topic: published, key: "app", value: Array("before".utf8))
            broker.stop()
            try broker.start()
            // The producer reconnects (and makes `published` again, on its own, by asking for it).
            _ = try await producer.send(topic: published, key: "app", value: Array("during".utf8))
            // `lost` is not on the broker: Kafka would answer UNKNOWN_TOPIC_OR_PARTITION.
            let receipt: KafkaDeliveryReceipt
            do {
                receipt = try await producer.send(topic: lost, key: "_global", value: Array("rotated".utf8))
            } catch {
                Issue.record("the send to the lost topic was refused (\(error)): this defect is gone; see \(Self.page)")
                return
            }
            try await administrator.ensureTopics([lost], partitions: 3)
            let reader = try KafkaBroadcastConsumer(configuration: configuration, topics: [lost], startPosition: .beginning, logger: testLogger)
            let read = try await withRunningServices([reader]) {
                try? await collect(1, from: reader, timeout: .seconds(5))
            }
            #expect(
                read == nil,
                "the send acknowledged at \(receipt.partition)@\(receipt.offset) was kept: this defect is gone; see \(Self.page)")
        }
    }
}

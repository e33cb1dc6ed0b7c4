import Logging
import ServiceLifecycle
import SesameKafka
import SesameTestSupport
import Testing

@Suite("Kafka when the broker or the process goes away", .timeLimit(.minutes(3)))
struct KafkaFailureTests {
    @Test("a consumer survives a broker restart and goes on reading")
    func consumerSurvivesRestart() async throws {
        let broker = try TansuBroker()
        // The restarted in-memory broker forgets producer ids, which an idempotent producer never
        // recovers from (a real Kafka keeps them); see `KafkaConfiguration.idempotentDelivery`.
        let configuration = KafkaConfiguration(
            brokers: broker.brokers, clientID: "restart-test", messageTimeout: .seconds(20), idempotentDelivery: false)
        let topic = TestKafka.uniqueTopic()
        try await KafkaTopicAdministrator(configuration: configuration).ensureTopics([topic], partitions: 1)
        let producer = try KafkaProducer(configuration: configuration, logger: testLogger)
        let consumer = try KafkaBroadcastConsumer(configuration: configuration, topics: [topic], startPosition: .beginning, logger: testLogger)

        try await withRunningServices([producer, consumer]) {
            for index in 0..<5 { try await producer.send(topic: topic, key: "k", value: Array("before-\(index)".utf8)) }
            #expect(try await collect(5, from: consumer).count == 5)

            broker.stop()
            try broker.start()
            // Tansu keeps its log in memory: the restarted broker starts empty, so the consumer's
            // position (5) is past the new log's end and it must start over from the earliest
            // offset. One message first, so that position is out of range whatever the timing.
            try await KafkaTopicAdministrator(configuration: configuration).ensureTopics([topic], partitions: 1)
            try await producer.send(topic: topic, key: "k", value: Array("after-0".utf8))
            let firstAfter = try await collect(1, from: consumer, timeout: .seconds(40))
            #expect(firstAfter.map { String(decoding: $0.value, as: UTF8.self) } == ["after-0"])
            for index in 1..<10 { try await producer.send(topic: topic, key: "k", value: Array("after-\(index)".utf8)) }
            let rest = try await collect(9, from: consumer)
            #expect(rest.map { String(decoding: $0.value, as: UTF8.self) } == (1..<10).map { "after-\($0)" })
        }
    }

    @Test("a topic the restarted broker lost is read again as soon as it is back, though no message was ever read from it")
    func vanishedTopicComesBack() async throws {
        let broker = try TansuBroker()
        let configuration = KafkaConfiguration(
            brokers: broker.brokers, clientID: "vanished-topic-test", messageTimeout: .seconds(20), idempotentDelivery: false)
        let topic = TestKafka.uniqueTopic()
        let administrator = KafkaTopicAdministrator(configuration: configuration)
        try await administrator.ensureTopics([topic], partitions: 3)
        let producer = try KafkaProducer(configuration: configuration, logger: testLogger)
        let consumer = try KafkaBroadcastConsumer(configuration: configuration, topics: [topic], startPosition: .end, logger: testLogger)

        try await withRunningServices([producer, consumer]) {
            try await eventually("the consumer is assigned") { consumer.isAssigned }
            broker.stop()
            try broker.start()
            // Long enough for the consumer to look and find the topic gone (it looks every 2 s).
            try await Task.sleep(for: .seconds(5))
            try await administrator.ensureTopics([topic], partitions: 3)
            try await producer.send(topic: topic, key: "k", value: Array("after".utf8))
            let received = try await collect(1, from: consumer, timeout: .seconds(15))
            #expect(received.map { String(decoding: $0.value, as: UTF8.self) } == ["after"])
        }
    }

    @Test("a topic the restarted broker lost and got back is read from its start, even once its new log reaches the old position")
    func recreatedTopicReadFromStart() async throws {
        let broker = try TansuBroker()
        let configuration = KafkaConfiguration(
            brokers: broker.brokers, clientID: "recreated-topic-test", messageTimeout: .seconds(20), idempotentDelivery: false)
        let topic = TestKafka.uniqueTopic()
        let administrator = KafkaTopicAdministrator(configuration: configuration)
        try await administrator.ensureTopics([topic], partitions: 1)
        let consumer = try KafkaBroadcastConsumer(configuration: configuration, topics: [topic], startPosition: .end, logger: testLogger)

        try await withRunningServices([consumer]) {
            try await eventually("the consumer is assigned") { consumer.isAssigned }
            // Each producer lives for one message: a producer that knows the topic would have the
            // restarted broker create it again on its own, with the broker's default partitions.
            let before = try KafkaProducer(configuration: configuration, logger: testLogger)
            _ = try await withRunningServices([before]) { try await before.send(topic: topic, key: "k", value: Array("before".utf8)) }
            #expect(try await collect(1, from: consumer).count == 1)
            broker.stop()
            try broker.start()
            // As soon as a relay would create it again: the consumer must have looked by then.
            try await Task.sleep(for: .seconds(1))
            // Back with as many partitions as before, so nothing looks different but the log: its
            // first message takes offset 0, and its end (1) reaches the consumer's old position.
            try await administrator.ensureTopics([topic], partitions: 1)
            let after = try KafkaProducer(configuration: configuration, logger: testLogger)
            _ = try await withRunningServices([after]) { try await after.send(topic: topic, key: "k", value: Array("after".utf8)) }
            let received = try await collect(1, from: consumer, timeout: .seconds(15))
            #expect(received.map { String(decoding: $0.value, as: UTF8.self) } == ["after"])
        }
    }

    @Test("with the broker down, a send fails within the message timeout instead of hanging")
    func sendToStoppedBrokerFails() async throws {
        let broker = try TansuBroker()
        broker.stop()
        let configuration = KafkaConfiguration(brokers: broker.brokers, clientID: "down-test", messageTimeout: .seconds(2))
        let producer = try KafkaProducer(configuration: configuration, logger: testLogger)
        try await withRunningServices([producer]) {
            let started = ContinuousClock.now
            await #expect {
                try await producer.send(topic: TestKafka.uniqueTopic(), key: "k", value: [1])
            } throws: { error in
                (error as? KafkaError)?.kind == .deliveryFailed
            }
            #expect(ContinuousClock.now - started < .seconds(10))
        }
    }

    @Test("on shutdown, in-flight sends are acknowledged or failed, never left waiting; later sends are refused")
    func shutdownSettlesEverySend() async throws {
        let broker = try TansuBroker()
        broker.stop()
        // Nothing can be acknowledged, and the timeout is far away: only shutdown can settle the sends.
        let configuration = KafkaConfiguration(
            brokers: broker.brokers, clientID: "shutdown-test", messageTimeout: .seconds(120), flushTimeout: .milliseconds(500))
        let producer = try KafkaProducer(configuration: configuration, logger: testLogger)
        let group = ServiceGroup(configuration: .init(services: [producer], logger: testLogger))
        let topic = TestKafka.uniqueTopic()

        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            let sends = Task {
                await producer.send(batch: (0..<50).map { KafkaOutgoingMessage(topic: topic, key: "k", value: [UInt8($0)]) })
            }
            try await Task.sleep(for: .milliseconds(300))
            await group.triggerGracefulShutdown()
            let results = await sends.value
            #expect(results.count == 50)
            #expect(results.allSatisfy { if case .failure(let error) = $0 { error.kind == .shutDown } else { false } })
            try await tasks.waitForAll()
        }
        await #expect {
            try await producer.send(topic: topic, key: "k", value: [1])
        } throws: { error in
            (error as? KafkaError)?.kind == .shutDown
        }
    }
}

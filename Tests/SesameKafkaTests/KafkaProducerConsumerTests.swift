import Logging
import SesameKafka
import SesameTestSupport
import Testing

@Suite("Kafka producer and broadcast consumers", .timeLimit(.minutes(2)))
struct KafkaProducerConsumerTests {
    @Test("two independent consumers both receive every message, in order per key")
    func broadcastInOrder() async throws {
        let configuration = KafkaConfiguration(brokers: try TestKafka.brokers(), clientID: "broadcast-test")
        let topic = TestKafka.uniqueTopic()
        try await KafkaTopicAdministrator(configuration: configuration).ensureTopics([topic], partitions: 3)

        let producer = try KafkaProducer(configuration: configuration, logger: testLogger)
        let first = try KafkaBroadcastConsumer(configuration: configuration, topics: [topic], startPosition: .beginning, logger: testLogger)
        let second = try KafkaBroadcastConsumer(configuration: configuration, topics: [topic], startPosition: .beginning, logger: testLogger)
        let keys = ["TEAM.app.one", "TEAM.app.two", "TEAM.app.three", "TEAM.app.four"]
        let perKey = 25

        try await withRunningServices([producer, first, second]) {
            var partitionsUsed: [String: Set<Int32>] = [:]
            for index in 0..<perKey {
                for key in keys {
                    let receipt = try await producer.send(topic: topic, key: key, value: Array("\(key)#\(index)".utf8))
                    partitionsUsed[key, default: []].insert(receipt.partition)
                }
            }
            #expect(partitionsUsed.values.allSatisfy { $0.count == 1 }, "one key, one partition")

            for consumer in [first, second] {
                let received = try await collect(keys.count * perKey, from: consumer)
                for key in keys {
                    let values = received.filter { $0.key == Array(key.utf8) }.map { String(decoding: $0.value, as: UTF8.self) }
                    #expect(values == (0..<perKey).map { "\(key)#\($0)" })
                }
            }
        }
    }

    @Test("a batch keeps its order and reports each message")
    func batchOrder() async throws {
        let configuration = KafkaConfiguration(brokers: try TestKafka.brokers(), clientID: "batch-test")
        let topic = TestKafka.uniqueTopic()
        try await KafkaTopicAdministrator(configuration: configuration).ensureTopics([topic], partitions: 1)
        let producer = try KafkaProducer(configuration: configuration, logger: testLogger)
        let consumer = try KafkaBroadcastConsumer(configuration: configuration, topics: [topic], startPosition: .beginning, logger: testLogger)

        try await withRunningServices([producer, consumer]) {
            let batch = (0..<200).map { KafkaOutgoingMessage(topic: topic, key: "k", value: Array("\($0)".utf8)) }
            let results = await producer.send(batch: batch)
            let offsets = try results.map { try $0.get().offset }
            #expect(offsets == Array(offsets.sorted()))
            #expect(Set(offsets).count == 200)
            let received = try await collect(200, from: consumer)
            #expect(received.map { String(decoding: $0.value, as: UTF8.self) } == (0..<200).map { "\($0)" })
        }
    }

    @Test("a message's trace context headers reach the consumer; other headers, and oversized values, are not read")
    func traceHeaders() async throws {
        let configuration = KafkaConfiguration(brokers: try TestKafka.brokers(), clientID: "headers-test")
        let topic = TestKafka.uniqueTopic()
        try await KafkaTopicAdministrator(configuration: configuration).ensureTopics([topic], partitions: 1)
        let producer = try KafkaProducer(configuration: configuration, logger: testLogger)
        let consumer = try KafkaBroadcastConsumer(configuration: configuration, topics: [topic], startPosition: .beginning, logger: testLogger)
        let traceParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

        try await withRunningServices([producer, consumer]) {
            let batch = [
                KafkaOutgoingMessage(
                    topic: topic, key: "k", value: Array("traced".utf8),
                    headers: ["traceparent": traceParent, "tracestate": "vendor=1", "x-secret": "not for the consumer"]),
                KafkaOutgoingMessage(topic: topic, key: "k", value: Array("plain".utf8)),
                KafkaOutgoingMessage(
                    topic: topic, key: "k", value: Array("oversized".utf8), headers: ["traceparent": String(repeating: "0", count: 2000)]),
            ]
            for result in await producer.send(batch: batch) { _ = try result.get() }
            let received = try await collect(3, from: consumer)
            #expect(received[0].headers == ["traceparent": traceParent, "tracestate": "vendor=1"])
            #expect(received[1].headers.isEmpty)
            #expect(received[2].headers.isEmpty, "a header value over 1 KiB is not read")
        }
    }

    @Test("a consumer starting at the end sees only what is written after it is assigned")
    func startAtEnd() async throws {
        let configuration = KafkaConfiguration(brokers: try TestKafka.brokers(), clientID: "end-test")
        let topic = TestKafka.uniqueTopic()
        try await KafkaTopicAdministrator(configuration: configuration).ensureTopics([topic], partitions: 2)
        let producer = try KafkaProducer(configuration: configuration, logger: testLogger)
        try await withRunningServices([producer]) {
            try await producer.send(topic: topic, key: "k", value: Array("before".utf8))
            let consumer = try KafkaBroadcastConsumer(configuration: configuration, topics: [topic], startPosition: .end, logger: testLogger)
            try await withRunningServices([consumer]) {
                try await waitUntilAssigned(consumer)
                try await producer.send(topic: topic, key: "k", value: Array("after".utf8))
                let received = try await collect(1, from: consumer)
                #expect(received.map { String(decoding: $0.value, as: UTF8.self) } == ["after"])
            }
        }
    }

    @Test("a caller that falls behind: the consumer holds only its buffer's worth, drops the rest, asks for a catch-up and goes on")
    func boundedBuffer() async throws {
        var configuration = KafkaConfiguration(brokers: try TestKafka.brokers(), clientID: "bounded-test")
        configuration.consumerBufferCapacity = 5
        let topic = TestKafka.uniqueTopic()
        try await KafkaTopicAdministrator(configuration: configuration).ensureTopics([topic], partitions: 1)
        let producer = try KafkaProducer(configuration: configuration, logger: testLogger)
        let consumer = try KafkaBroadcastConsumer(configuration: configuration, topics: [topic], startPosition: .end, logger: testLogger)
        try await withRunningServices([producer, consumer]) {
            try await waitUntilAssigned(consumer)
            // The catch-up asked for by the assignment itself.
            _ = try await collect(from: consumer.reconnections, timeout: .seconds(10), what: "the assignment's catch-up") { $0.count == 1 }
            let batch = (0..<50).map { KafkaOutgoingMessage(topic: topic, key: "k", value: Array("\($0)".utf8)) }
            for result in await producer.send(batch: batch) { _ = try result.get() }
            _ = try await collect(from: consumer.reconnections, timeout: .seconds(10), what: "the overflow's catch-up") { $0.count == 1 }
            // Let the consumer read the rest of the batch while nobody takes from its buffer.
            try await Task.sleep(for: .seconds(1))
            let held = try await collect(5, from: consumer)
            #expect(held.map { String(decoding: $0.value, as: UTF8.self) } == ["0", "1", "2", "3", "4"])
            // The other 45 are gone; with room again, the next message comes through.
            try await producer.send(topic: topic, key: "k", value: Array("after".utf8))
            let next = try await collect(1, from: consumer)
            #expect(next.map { String(decoding: $0.value, as: UTF8.self) } == ["after"])
        }
    }

    @Test("topics are created with the partitions asked for; creating again changes nothing; asking never creates")
    func topicAdministration() async throws {
        let configuration = KafkaConfiguration(brokers: try TestKafka.brokers(), clientID: "admin-test")
        let administrator = KafkaTopicAdministrator(configuration: configuration)
        let topic = TestKafka.uniqueTopic()
        #expect(try await administrator.partitionCount(of: topic) == nil)
        #expect(try await administrator.partitionCount(of: topic) == nil, "asking did not create it")
        try await administrator.ensureTopics([topic], partitions: 3)
        #expect(try await administrator.partitionCount(of: topic) == 3)
        try await administrator.ensureTopics([topic], partitions: 5)
        #expect(try await administrator.partitionCount(of: topic) == 3)
    }

    @Test("a refused property is a configuration error naming it")
    func badConfiguration() {
        let configuration = KafkaConfiguration(brokers: ["127.0.0.1:1"], extraProperties: ["no.such.property": "1"])
        #expect {
            _ = try KafkaProducer(configuration: configuration, logger: testLogger)
        } throws: { error in
            (error as? KafkaError)?.kind == .configuration && "\(error)".contains("no.such.property")
        }
    }
}

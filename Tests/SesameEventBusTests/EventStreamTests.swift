import Logging
import SesameEventBus
import SesameEvents
import SesameKafka
import SesameTestSupport
import Testing

@Suite("Event stream: decoding, skipping, de-duplicating")
struct EventStreamTests {
    private func message(_ bytes: [UInt8], offset: Int64) -> KafkaMessage {
        KafkaMessage(topic: EventTopic.configChanges, partition: 0, offset: offset, key: nil, value: bytes)
    }

    @Test("malformed, newer and unknown messages are counted and skipped; the stream goes on")
    func skipsWhatItCannotUse() async {
        let good = (1...3).map { _ in EventEnvelope(appID: "T.app", event: .appChanged) }
        let (messages, input) = AsyncStream.makeStream(of: KafkaMessage.self)
        input.yield(message(EventCodec.encode(good[0]), offset: 0))
        input.yield(message(Array("{not json".utf8), offset: 1))
        input.yield(message(Array(#"{"version":9}"#.utf8), offset: 2))
        input.yield(message(EventCodec.encode(good[1]), offset: 3))
        input.yield(message([0xFF, 0x00, 0xC3], offset: 4))
        input.yield(message(EventCodec.encode(good[2]), offset: 5))
        input.finish()

        let statistics = EventStreamStatistics()
        var received: [EventEnvelope] = []
        for await envelope in EventStream(messages: messages, statistics: statistics, logger: Logger(label: "test")) {
            received.append(envelope)
        }
        #expect(received.map(\.id) == good.map(\.id))
        #expect(received.map(\.event) == good.map(\.event))
        #expect(statistics.rejectedCount == 3)
        #expect(statistics.deliveredCount == 3)
    }

    @Test("an event delivered twice reaches the caller once")
    func dropsRepeats() async {
        let events = (1...4).map { _ in EventEnvelope(appID: "T.app", event: .appChanged) }
        let (messages, input) = AsyncStream.makeStream(of: KafkaMessage.self)
        for (offset, index) in [0, 1, 1, 2, 0, 3, 3].enumerated() {
            input.yield(message(EventCodec.encode(events[index]), offset: Int64(offset)))
        }
        input.finish()
        let statistics = EventStreamStatistics()
        var received: [EventEnvelope] = []
        for await envelope in EventStream(messages: messages, statistics: statistics, logger: Logger(label: "test")) {
            received.append(envelope)
        }
        #expect(received.map(\.id) == events.map(\.id))
        #expect(statistics.duplicateCount == 3)
    }

    @Test("a malformed event on a real topic is counted and skipped, and the consumer keeps going")
    func malformedOnTheBroker() async throws {
        let configuration = KafkaConfiguration(brokers: try TestKafka.brokers(), clientID: "malformed-test")
        let topic = TestKafka.uniqueTopic()
        try await KafkaTopicAdministrator(configuration: configuration).ensureTopics([topic], partitions: 1)
        let producer = try KafkaProducer(configuration: configuration, logger: testLogger)
        let consumer = try KafkaBroadcastConsumer(configuration: configuration, topics: [topic], startPosition: .beginning, logger: testLogger)
        let statistics = EventStreamStatistics()
        let stream = EventStream(consumer: consumer, statistics: statistics, logger: testLogger)
        let valid = EventEnvelope(appID: "T.app", event: .signingKeyRotated(SigningKeyRotated(kid: "k2")))

        try await withRunningServices([producer, consumer]) {
            try await producer.send(topic: topic, key: "T.app", value: Array("garbage".utf8))
            try await producer.send(topic: topic, key: "T.app", value: Array(#"{"version":2,"type":"config.published"}"#.utf8))
            try await producer.send(topic: topic, key: "T.app", value: EventCodec.encode(valid))
            let received = try await collectEvents(from: stream) { $0.count == 1 }
            #expect(received.map(\.id) == [valid.id])
            #expect(statistics.rejectedCount == 2)
        }
    }
}

import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
@testable import SesameEventBus
import SesameEvents
import SesameKafka
import SesameStorage
import SesameTestSupport
import Testing

@Suite("Transactional outbox and relay", .timeLimit(.minutes(3)))
struct OutboxRelayTests {
    @Test("Kafka stopped, 100 changes committed, Kafka started: all 100 events arrive, in order, none twice")
    func survivesKafkaOutage() async throws {
        let broker = try TansuBroker()
        broker.stop()
        let configuration = KafkaConfiguration(brokers: broker.brokers, clientID: "outage-test", messageTimeout: .seconds(2))
        let appID = uniqueAppID()
        try await withMigratedDatabase { database in
            let producer = try KafkaProducer(configuration: configuration, logger: testLogger)
            let relay = OutboxRelay(
                database: database, producer: producer, topics: KafkaTopicAdministrator(configuration: configuration),
                configuration: fastRelay, logger: testLogger)
            let consumer = try KafkaBroadcastConsumer(
                configuration: configuration, topics: [EventTopic.configChanges], startPosition: .beginning, logger: testLogger)
            let statistics = EventStreamStatistics()
            let stream = EventStream(consumer: consumer, statistics: statistics, logger: testLogger)

            try await withRunningServices([producer, relay, consumer]) {
                var committed: [EventEnvelope] = []
                for revision in 1...100 {
                    committed.append(try await commitStateChange(revision: Int64(revision), appID: appID, on: database))
                }
                try await Task.sleep(for: .seconds(1))
                #expect(try await unpublishedCount(database) == 100, "nothing is marked published while Kafka is down")

                try broker.start()
                let received = try await collectEvents(from: stream, timeout: .seconds(60)) { $0.count == 100 }
                #expect(received.map(\.id) == committed.map(\.id))
                try await eventually("every row marked published") { try await unpublishedCount(database) == 0 }
            }
        }
    }

    @Test("two relays running at once publish each outbox row exactly once")
    func twoRelays() async throws {
        let configuration = KafkaConfiguration(brokers: try TestKafka.brokers(), clientID: "two-relays-test")
        let appID = uniqueAppID()
        try await withMigratedDatabase { database in
            var committed: [EventEnvelope] = []
            for revision in 1...300 {
                committed.append(try await commitStateChange(revision: Int64(revision), appID: appID, on: database))
            }
            let administrator = KafkaTopicAdministrator(configuration: configuration)
            let producers = try (0..<2).map { _ in try KafkaProducer(configuration: configuration, logger: testLogger) }
            let relays = producers.map {
                OutboxRelay(database: database, producer: $0, topics: administrator, configuration: fastRelay, logger: testLogger)
            }
            try await administrator.ensureTopics(EventTopic.all, partitions: 3)
            let consumer = try KafkaBroadcastConsumer(
                configuration: configuration, topics: [EventTopic.configChanges], startPosition: .beginning, logger: testLogger)

            try await withRunningServices([consumer]) {
                try await withRunningServices(producers + relays) {
                    try await eventually("every row published") { try await unpublishedCount(database) == 0 }
                }
                // Raw messages, not the de-duplicating stream: the broker itself must hold each once.
                var seen: [UUID: Int] = [:]
                var ordered: [UUID] = []
                let wanted = Set(committed.map(\.id))
                for await message in consumer.messages {
                    guard let envelope = try? EventCodec.decode(message.value), envelope.appID == appID else { continue }
                    seen[envelope.id, default: 0] += 1
                    ordered.append(envelope.id)
                    if Set(seen.keys) == wanted { break }
                }
                // Let any duplicate that was on its way arrive, then look again.
                try await Task.sleep(for: .milliseconds(500))
                #expect(seen.values.allSatisfy { $0 == 1 })
                #expect(ordered == committed.map(\.id), "in commit order")
            }
        }
    }

    @Test("shutdown with messages in flight: every row is acknowledged or still in the outbox")
    func shutdownInFlight() async throws {
        let configuration = KafkaConfiguration(brokers: try TestKafka.brokers(), clientID: "shutdown-relay-test")
        let appID = uniqueAppID()
        try await withMigratedDatabase { database in
            let total = 1000
            for revision in 1...total {
                _ = try await commitStateChange(revision: Int64(revision), appID: appID, on: database)
            }
            let administrator = KafkaTopicAdministrator(configuration: configuration)
            try await administrator.ensureTopics(EventTopic.all, partitions: 3)
            let consumer = try KafkaBroadcastConsumer(
                configuration: configuration, topics: [EventTopic.configChanges], startPosition: .beginning, logger: testLogger)

            try await withRunningServices([consumer]) {
                let producer = try KafkaProducer(configuration: configuration, logger: testLogger)
                let relay = OutboxRelay(
                    database: database, producer: producer, topics: nil, configuration: fastRelay, logger: testLogger)
                let group = ServiceGroup(configuration: .init(services: [producer, relay], logger: testLogger))
                try await withThrowingTaskGroup(of: Void.self) { tasks in
                    tasks.addTask { try await group.run() }
                    try await eventually("the relay has started publishing") { try await unpublishedCount(database) < total }
                    await group.triggerGracefulShutdown()
                    try await tasks.waitForAll()
                }

                let published = try await publishedEventIDs(database)
                let unpublished = try await unpublishedCount(database)
                #expect(published.count + unpublished == total)
                #expect(unpublished > 0, "shutdown came before the relay finished, so the test tested something")

                var onBroker = Set<UUID>()
                for await message in consumer.messages {
                    guard let envelope = try? EventCodec.decode(message.value), envelope.appID == appID else { continue }
                    onBroker.insert(envelope.id)
                    if onBroker.isSuperset(of: published) { break }
                }
                #expect(onBroker.isSuperset(of: published), "every row marked published is on the broker")
            }
        }
    }

    @Test("published rows past retention are pruned; unpublished rows never are")
    func pruning() async throws {
        let configuration = KafkaConfiguration(brokers: try TestKafka.brokers(), clientID: "prune-test")
        try await withMigratedDatabase { database in
            for revision in 1...6 { _ = try await commitStateChange(revision: Int64(revision), appID: uniqueAppID(), on: database) }
            try await database.client.query(
                "UPDATE outbox SET published_at = now() - interval '8 days', created_at = now() - interval '8 days' WHERE id <= 2",
                logger: testLogger)
            try await database.client.query("UPDATE outbox SET published_at = now() WHERE id = 3", logger: testLogger)
            try await database.client.query("UPDATE outbox SET created_at = now() - interval '30 days' WHERE id = 4", logger: testLogger)
            let relay = OutboxRelay(
                database: database, producer: try KafkaProducer(configuration: configuration, logger: testLogger), topics: nil,
                configuration: OutboxRelayConfiguration(retention: .seconds(7 * 24 * 3600)), logger: testLogger)
            #expect(try await relay.prune() == 2)
            let rows = try await database.client.query("SELECT id FROM outbox ORDER BY id", logger: testLogger)
            var remaining: [Int64] = []
            for try await id in rows.decode(Int64.self) { remaining.append(id) }
            #expect(remaining == [3, 4, 5, 6])
        }
    }

    private func publishedEventIDs(_ database: Database) async throws -> Set<UUID> {
        let rows = try await database.client.query(
            "SELECT payload FROM outbox WHERE published_at IS NOT NULL", logger: testLogger)
        var ids = Set<UUID>()
        for try await payload in rows.decode(ByteBuffer.self) { ids.insert(try EventCodec.decode(Array(buffer: payload)).id) }
        return ids
    }
}

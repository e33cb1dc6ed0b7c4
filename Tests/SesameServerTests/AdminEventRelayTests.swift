import AdminService
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import PostgresNIO
import SesameConfiguration
import SesameEventBus
import SesameEvents
import SesameKafka
import SesameServer
import SesameStorage
import SesameTestSupport
import Testing

/// The admin process owns the event bus's publishing side: it creates the topics and relays the outbox.
@Suite("Admin service: topics and outbox relay", .timeLimit(.minutes(2)))
struct AdminEventRelayTests {
    @Test("at start the admin service creates the Sesame topics, then publishes what services commit to the outbox")
    func createsTopicsAndRelays() async throws {
        // A broker of this test's own, so the topics cannot already exist.
        let broker = try TansuBroker()
        let kafka = KafkaConfiguration(brokers: broker.brokers)
        let administrator = KafkaTopicAdministrator(configuration: kafka)
        for topic in EventTopic.all {
            #expect(try await administrator.partitionCount(of: topic) == nil)
        }

        try await TestDatabase.withFreshDatabase { url in
            let configuration = ServiceConfiguration(
                databaseURL: url.connectionString, kafkaBrokers: broker.brokers,
                masterKey: MasterKeyMaterial(current: Array(repeating: 1, count: 32)), port: 0)
            let app = try AdminService.buildApplication(configuration: configuration)
            try await app.test(.live) { _ in
                try await eventually("topics created") {
                    var allExist = true
                    for topic in EventTopic.all where try await administrator.partitionCount(of: topic) == nil { allExist = false }
                    return allExist
                }

                let consumer = try KafkaBroadcastConsumer(
                    configuration: kafka, topics: [EventTopic.revocations], startPosition: .beginning,
                    logger: Logger(label: "test"))
                let stream = EventStream(consumer: consumer, logger: Logger(label: "test"))
                let envelope = EventEnvelope(appID: nil, event: .signingKeyRotated(SigningKeyRotated(kid: "test-kid")))
                try await TestDatabase.withClient(url) { client in
                    // The outbox table exists once the admin service's migrations have run.
                    try await eventually("event committed to the outbox") {
                        do {
                            try await client.withTransaction(logger: Logger(label: "test")) { connection in
                                try await Outbox.append(envelope, on: connection, logger: Logger(label: "test"))
                            }
                            return true
                        } catch {
                            return false
                        }
                    }
                }
                try await withRunningServices([consumer]) {
                    var iterator = stream.makeAsyncIterator()
                    let received = await iterator.next()
                    #expect(received?.id == envelope.id)
                    #expect(received?.event == envelope.event)
                }
            }
        }
    }
}

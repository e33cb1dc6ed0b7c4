import Hummingbird
import ServiceLifecycle
import SesameEventBus
import SesameHTTP
import SesameKafka
import SesameServer

/// The `sesame-admin` service: its name, default port, routes and background work.
public enum AdminService: SesameServiceDefinition {
    public static let name = "admin"
    public static let defaultPort = 8083

    /// No routes yet. In the background: the Kafka producer and the outbox relay (admin publishes
    /// every event Sesame emits; the relay creates the Sesame topics before publishing).
    public static func configure(_ router: Router<SesameRequestContext>, dependencies: ServiceDependencies) throws -> [any Service] {
        let producer = try KafkaProducer(configuration: dependencies.kafka, logger: dependencies.logger)
        let relay = OutboxRelay(
            database: dependencies.database, producer: producer, topics: KafkaTopicAdministrator(configuration: dependencies.kafka),
            logger: dependencies.logger)
        return [producer, relay]
    }
}

import Logging
import SesameConfiguration
import SesameEncryption
import SesameKafka
import SesameStorage

/// The long-lived things a service's handlers use, built once at start.
public struct ServiceDependencies: Sendable {
    /// The validated configuration.
    public let configuration: ServiceConfiguration
    /// The PostgreSQL pool.
    public let database: Database
    /// Brings the schema up to date at start; work that needs the current schema waits for it.
    public let migrations: MigrationService
    /// How to reach Kafka.
    public let kafka: KafkaConfiguration
    /// Envelope encryption under the configured master key.
    public let encryption: EnvelopeEncryption
    /// The service's logger.
    public let logger: Logger
}

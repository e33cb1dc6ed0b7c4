import ArgumentParser
import Crypto
import Foundation
import Hummingbird
import ServiceLifecycle
import SesameConfiguration
import SesameEncryption
import SesameEventBus
import SesameHTTP
import SesameKafka
import SesameServer

/// The `sesame-admin` service: the management API (provisioning keys, configs, kill switches,
/// emergency revocations, blobs, audit) and, in the
/// background, the outbox relay that publishes every event Sesame emits (it creates the Sesame
/// topics before publishing).
public enum AdminService: SesameServiceDefinition {
    public static let name = "admin"
    public static let defaultPort = 8083

    /// Room for the largest config, and the largest blob as base64, plus their JSON wrapping.
    public static func bodyLimits(_ configuration: ServiceConfiguration) -> [String: Int] {
        [
            "/v1/admin/": configuration.maxConfigBytes + 64 * 1024,
            "/v1/admin/blob/": configuration.maxBlobBytes / 3 * 4 + 64 * 1024,
        ]
    }

    /// `keys create`.
    public static var commands: [any ParsableCommand.Type] { [KeysCommand.self] }

    public static func configure(_ router: Router<SesameRequestContext>, dependencies: ServiceDependencies) throws -> [any Service] {
        let (database, logger, configuration) = (dependencies.database, dependencies.logger, dependencies.configuration)
        let keys = ProvisioningKeyStore(database: database, pathKey: storageIDKey(masterKey: configuration.masterKey.current), logger: logger)
        let authenticator = AdminAuthenticator(keys: keys, operatorToken: configuration.operatorToken)
        let configs = ConfigStore(database: database, encryption: dependencies.encryption, logger: logger)
        let blobs = BlobStore(database: database, encryption: dependencies.encryption, logger: logger)

        let admin = router.group("v1/admin")
        KeyRoutes.add(to: admin, authenticator: authenticator, keys: keys)
        ConfigRoutes.add(to: admin, authenticator: authenticator, configs: configs, maxConfigBytes: configuration.maxConfigBytes)
        SafetyRoutes.add(to: admin, authenticator: authenticator, safety: SafetyStore(database: database, logger: logger))
        BlobRoutes.add(
            to: admin, authenticator: authenticator, blobs: blobs,
            maxBlobBytes: configuration.maxBlobBytes)
        PolicyRoutes.add(
            to: admin, authenticator: authenticator, policies: PolicyStore(database: database, logger: logger),
            inProduction: configuration.environment == .production)
        AuditRoutes.add(to: admin, authenticator: authenticator, audit: AuditLog(database: database, logger: logger))

        let producer = try KafkaProducer(configuration: dependencies.kafka, logger: logger)
        let relay = OutboxRelay(
            database: database, producer: producer, topics: KafkaTopicAdministrator(configuration: dependencies.kafka), logger: logger)
        // Without Kafka changes are kept in the outbox and published when it returns.
        dependencies.readiness.add(ReadinessCheck(name: "kafka", impact: .degrading) { relay.isPublishing })
        return [producer, relay, BlobSealer(blobs: blobs, migrations: dependencies.migrations, logger: logger)]
    }

    /// The key app storage ids are derived from. Derived from the master key in use when the app is
    /// registered; the id is stored then, so a later master key rotation does not move it.
    static func storageIDKey(masterKey: [UInt8]) -> SymmetricKey {
        PurposeKey.derive(from: masterKey, purpose: "sesame storage id")
    }
}

import Crypto
import Foundation
import Hummingbird
import SesameConfiguration
import ServiceLifecycle
import SesameEventBus
import SesameEvents
import SesameHTTP
import SesameKafka
import SesameServer
import SesameTokens

/// The `sesame-delivery` service: serves attested apps their config from memory, kept current by
/// Kafka events and a periodic resync from PostgreSQL.
public enum DeliveryService: SesameServiceDefinition {
    public static let name = "delivery"
    public static let defaultPort = 8082

    /// Per-user documents may be larger than the default body limit.
    public static func bodyLimits(_ configuration: ServiceConfiguration) -> [String: Int] {
        ["/v1/user/": UserDataEndpoint.maxBodyBytes]
    }

    public static func configure(_ router: Router<SesameRequestContext>, dependencies: ServiceDependencies) throws -> [any Service] {
        let (database, logger) = (dependencies.database, dependencies.logger)
        let authority = TokenAuthority(
            store: SigningKeyStore(database: database, encryption: dependencies.encryption, logger: logger),
            lifetimes: dependencies.configuration.tokenLifetimes, signs: false, logger: logger)
        let tokens = AccessTokenVerifier(authority: authority)
        let cache = DeliveryCache()
        let endpoint = ConfigEndpoint(cache: cache, tokens: tokens)
        router.get("v1/config") { request, _ in try await endpoint.respond(to: request) }
        let userData = UserDataEndpoint(
            store: UserDataStore(
                database: database, encryption: dependencies.encryption,
                userKey: HKDF<SHA256>.deriveKey(
                    inputKeyMaterial: SymmetricKey(data: dependencies.configuration.masterKey.current),
                    info: Data("sesame user id".utf8), outputByteCount: 32),
                logger: logger),
            tokens: tokens)
        router.get("v1/user/data") { request, _ in try await userData.get(request) }
        router.put("v1/user/data") { request, _ in try await userData.put(request) }

        let consumer = try KafkaBroadcastConsumer(
            configuration: dependencies.kafka, topics: [EventTopic.configPublished, EventTopic.revocations], startPosition: .end,
            logger: logger)
        let synchronizer = CacheSynchronizer(
            cache: cache, loader: DeliveryLoader(database: database, encryption: dependencies.encryption, logger: logger), tokens: tokens,
            events: EventStream(consumer: consumer, logger: logger), logger: logger)
        return [consumer, synchronizer]
    }
}

import Crypto
import Foundation
import Hummingbird
import ServiceLifecycle
import SesameConfiguration
import SesameEncryption
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

    /// A key for one purpose, derived from the current master key: for what may change when the
    /// master key rotates (blob links live five minutes).
    static func derivedKey(_ configuration: ServiceConfiguration, purpose: String) -> SymmetricKey {
        PurposeKey.derive(from: configuration.masterKey.current, purpose: purpose)
    }

    /// Configs are served from memory while PostgreSQL is away.
    public static let servesWithoutDatabase = true

    /// The hot path: configs come from memory and never wait on PostgreSQL.
    public static let pathsServedFromMemory = ["/v1/config"]

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
        let configuration = dependencies.configuration
        let gate = AccessGate(
            cache: cache, tokens: tokens, clients: ClientAddressResolver(trustedProxies: configuration.trustedProxies),
            ratePerKey: configuration.requestRatePerKey, ratePerClient: configuration.requestRatePerClient)
        let endpoint = ConfigEndpoint(gate: gate)
        router.get("v1/config") { request, context in try await endpoint.respond(to: request, context: context) }
        let userData = UserDataEndpoint(
            store: UserDataStore(
                database: database, encryption: dependencies.encryption,
                keys: ServiceKeyStore(database: database, encryption: dependencies.encryption, logger: logger),
                logger: logger),
            gate: gate, identity: UserIdentity(keys: IdentityKeyCache(logger: logger)))
        let blobs = BlobEndpoint(
            database: database, encryption: dependencies.encryption, links: BlobLinks(key: derivedKey(dependencies.configuration, purpose: "sesame blob links")), gate: gate,
            logger: logger)
        router.get("v1/blob/{key}") { request, context in try await blobs.link(request, context: context) }
        router.get("v1/blob/{key}/content") { request, context in try await blobs.content(request, context: context) }
        router.get("v1/user/data") { request, context in try await userData.get(request, context: context) }
        router.put("v1/user/data") { request, context in try await userData.put(request, context: context) }

        let consumer = try KafkaBroadcastConsumer(
            configuration: dependencies.kafka, topics: [EventTopic.configPublished, EventTopic.revocations], startPosition: .end,
            logger: logger)
        let synchronizer = CacheSynchronizer(
            cache: cache, loader: DeliveryLoader(database: database, encryption: dependencies.encryption, logger: logger), tokens: tokens,
            events: EventStream(consumer: consumer, logger: logger), reconnections: consumer.reconnections, logger: logger,
            resyncInterval: dependencies.configuration.deliveryResyncInterval)
        // Not ready before the first load: an empty cache would answer 404 for every app.
        dependencies.readiness.add(ReadinessCheck(name: "cache") { cache.isLoaded })
        dependencies.readiness.add(ReadinessCheck(name: "kafka", impact: .degrading) { consumer.isReceiving })
        // One app that cannot be loaded does not take the others down; it is named here.
        dependencies.readiness.add(
            ReadinessCheck(
                name: "apps", impact: .degrading, detail: { "cannot load: " + cache.failing.keys.sorted().joined(separator: ", ") }
            ) { cache.failing.isEmpty })
        return [consumer, synchronizer]
    }
}

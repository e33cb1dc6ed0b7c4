import AppAttest
import Crypto
import Foundation
import Hummingbird
import ServiceLifecycle
import SesameAssertions
import SesameConfiguration
import SesameEncryption
import SesameEventBus
import SesameEvents
import SesameHTTP
import SesameKafka
import SesameOutbound
import SesameServer
import SesameStorage
import SesameTokens

/// The `sesame-delivery` service: serves attested apps their config from memory, kept current by
/// Kafka events and a periodic resync from PostgreSQL.
public enum DeliveryService: SesameServiceDefinition {
    public static let name = "delivery"
    public static var openAPIDocument: String { OpenAPIDocument.json }
    public static var errorCodes: [any ErrorCodes.Type] { [CommonErrorCode.self, AccessTokenErrorCode.self, DeliveryErrorCode.self] }
    public static let defaultPort = 8082

    /// A key for one purpose, derived from the current master key: for what may change when the
    /// master key rotates (blob links live five minutes).
    static func derivedKey(_ configuration: ServiceConfiguration, purpose: String) -> SymmetricKey {
        PurposeKey.derive(from: configuration.masterKey.current, purpose: purpose)
    }

    /// Configs are served from memory while PostgreSQL is away.
    public static let servesWithoutDatabase = true

    public static func parts(_ dependencies: ServiceDependencies) throws -> ServiceParts {
        let (database, logger) = (dependencies.database, dependencies.logger)
        let authority = TokenAuthority(
            store: SigningKeyStore(database: database, encryption: dependencies.encryption, logger: logger),
            lifetimes: dependencies.configuration.tokenLifetimes, signs: false, logger: logger)
        let tokens = AccessTokenVerifier(authority: authority)
        let notices = AppChangeNotices(
            limits: .init(
                perInstall: dependencies.configuration.streamsPerInstall, perAddress: dependencies.configuration.streamsPerAddress,
                perReplica: dependencies.configuration.streamsPerReplica))
        let cache = DeliveryCache(notices: notices)
        let configuration = dependencies.configuration
        let gate = AccessGate(
            cache: cache, tokens: tokens, clients: ClientAddressResolver(trustedProxies: configuration.trustedProxies),
            ratePerKey: configuration.requestRatePerKey, ratePerClient: configuration.requestRatePerClient,
            inProduction: configuration.environment == .production)
        var parts = ServiceParts()
        // The hot path: configs come from memory and never wait on PostgreSQL.
        let installCounts = RolloutInstallCounts(
            database: database, cache: cache, interval: configuration.deliveryResyncInterval, logger: logger)
        let configRoutes = ConfigRoutes(gate: gate, installCounts: installCounts)
        let configGroup = parts.group("v1/config", servedFromMemory: true)
        configRoutes.addRoutes(to: configGroup)
        ConfigUpdateRoutes(routes: configRoutes, notices: notices).addRoutes(to: configGroup)
        parts.fastPaths = [
            ConfigFastPath(routes: configRoutes, logger: logger),
            ConfigUpdateFastPath(routes: configRoutes, notices: notices, logger: logger),
        ]
        PinRoutes(gate: gate).addRoutes(to: parts.group("v1/pins", servedFromMemory: true))
        // Per-user documents may be larger than the default body limit.
        UserDataRoutes(
            store: UserDataStore(
                database: database, encryption: dependencies.encryption,
                keys: ServiceKeyStore(database: database, encryption: dependencies.encryption, logger: logger),
                logger: logger),
            gate: gate, identity: UserIdentity(
                keys: IdentityKeyCache(outbound: OutboundHTTPClient(policy: OutboundAddressPolicy(configuration: configuration)), logger: logger))
        ).addRoutes(to: parts.group("v1/user", bodyLimit: UserDataRoutes.maxBodyBytes))
        BlobRoutes(
            database: database, encryption: dependencies.encryption,
            links: BlobLinks(key: derivedKey(configuration, purpose: "sesame blob links")), gate: gate, logger: logger
        ).addRoutes(to: parts.group("v1/blob"))

        let relayQuotas = RelayQuotas(database: database, logger: logger)
        let relayUpstreams = PinnedClientPool(policy: OutboundAddressPolicy(configuration: configuration))
        RelayRoutes(
            gate: gate, upstreams: relayUpstreams, quotas: relayQuotas, slots: RelayCallSlots(),
            proofs: RelayProofCheck(
                authority: authority, consumed: ConsumedAPITokens(database: database, logger: logger),
                assertions: AssertionCheck(keys: AssertionKeys(database: database, logger: logger), verifier: AppAttestVerifier(additionalRoots: []))),
            logger: logger)
            .addRoutes(to: parts.group("v1/relay", bodyLimit: RelayRoutes.maxBodyBytes, servedFromMemory: true))

        let consumer = try KafkaBroadcastConsumer(
            configuration: dependencies.kafka, topics: [EventTopic.configChanges, EventTopic.revocations], startPosition: .end,
            logger: logger)
        let synchronizer = CacheSynchronizer(
            cache: cache, loader: DeliveryLoader(database: database, encryption: dependencies.encryption, logger: logger), tokens: tokens,
            events: EventStream(consumer: consumer, logger: logger), reconnections: consumer.reconnections,
            migrations: dependencies.migrations, logger: logger,
            resyncInterval: dependencies.configuration.deliveryResyncInterval)
        // Not ready before the first load: an empty cache would answer 404 for every app.
        parts.readiness = [
            ReadinessCheck(name: "cache") { cache.isLoaded },
            ReadinessCheck(name: "kafka", impact: .degrading) { consumer.isReceiving },
            // One app that cannot be loaded does not take the others down; it is named here (on
            // the service's own port; through the gateway only counted).
            ReadinessCheck(
                name: "apps", impact: .degrading, detail: { "cannot load: " + cache.failing.keys.sorted().joined(separator: ", ") },
                publicDetail: { "\(cache.failing.count) app(s) cannot be loaded" }
            ) { cache.failing.isEmpty },
        ]
        parts.services = [consumer, synchronizer, notices, installCounts, relayQuotas, RelayUpstreamsService(pool: relayUpstreams)]
        return parts
    }
}

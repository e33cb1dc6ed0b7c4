import ArgumentParser
import Crypto
import Foundation
import Hummingbird
import ServiceLifecycle
import SesameApple
import SesameConfiguration
import SesameEncryption
import SesameEventBus
import SesameHTTP
import SesameKafka
import SesameOutbound
import SesameServer
import SesameStorage
import WebAuthn

/// The `sesame-admin` service: the management API (provisioning keys, configs, kill switches,
/// emergency revocations, blobs, audit, webhooks) and, in the background, the outbox relay that
/// publishes every event Sesame emits (it creates the Sesame topics before publishing) and the
/// webhook dispatcher.
public enum AdminService: SesameServiceDefinition {
    /// The management API registers apps with the operator token.
    public static let servesOperators = true

    public static let name = "admin"
    public static var openAPIDocument: String { OpenAPIDocument.json }
    public static var errorCodes: [any ErrorCodes.Type] { [CommonErrorCode.self, AdminErrorCode.self] }
    public static let defaultPort = 8083

    /// `keys create`, `accounts invite`.
    public static var commands: [any ParsableCommand.Type] { [KeysCommand.self, AccountsCommand.self] }

    public static func parts(_ dependencies: ServiceDependencies) throws -> ServiceParts {
        let (database, logger, configuration) = (dependencies.database, dependencies.logger, dependencies.configuration)
        let keys = ProvisioningKeyStore(database: database, pathKey: storageIDKey(masterKey: configuration.masterKey.current), logger: logger)
        let accounts = AccountStore(database: database, logger: logger)
        let authenticator = AdminAuthenticator(
            keys: keys, operatorToken: configuration.operatorToken, accounts: accounts, dashboardOrigin: configuration.dashboardOrigin)
        let validations = SchemaValidationPool()
        let configs = ConfigStore(database: database, encryption: dependencies.encryption, validations: validations, logger: logger)
        let blobs = BlobStore(database: database, encryption: dependencies.encryption, logger: logger)
        let policies = PolicyStore(database: database, logger: logger)
        let deviceCheckKeys = DeviceCheckKeys(database: database, encryption: dependencies.encryption, logger: logger)
        let deviceCheck = DeviceCheckClient(configuration: configuration)
        let approvals = ChangeApprovals(database: database, encryption: dependencies.encryption, policies: policies, logger: logger)

        var parts = ServiceParts()
        // Room for the largest config, and the largest blob as base64, plus their JSON wrapping.
        // Before any credential lookup: an address that keeps presenting unknown credentials is refused.
        let failedCredentials = FailedCredentialLimiter(
            clients: ClientAddressResolver(trustedProxies: configuration.trustedProxies), burst: configuration.failedCredentialsPerAddress)
        let admin = parts.group("v1/admin", bodyLimit: configuration.maxConfigBytes + 64 * 1024).add(middleware: failedCredentials)
        let blobRoutes = parts.group("v1/admin/blob", bodyLimit: configuration.maxBlobBytes / 3 * 4 + 64 * 1024).add(middleware: failedCredentials)
        KeyRoutes(authenticator: authenticator, keys: keys, approvals: approvals).addRoutes(to: admin)
        BackendKeyRoutes(authenticator: authenticator, backendKeys: BackendKeyStore(database: database, logger: logger)).addRoutes(to: admin)
        AppleCredentialRoutes(
            authenticator: authenticator,
            credentials: AppleCredentialStore(database: database, encryption: dependencies.encryption, logger: logger), keys: deviceCheckKeys,
            deviceCheck: deviceCheck, approvals: approvals
        ).addRoutes(to: admin)
        ConfigRoutes(authenticator: authenticator, configs: configs, maxConfigBytes: configuration.maxConfigBytes, approvals: approvals)
            .addRoutes(to: admin)
        ConfigTargetingRoutes(authenticator: authenticator, configs: configs, approvals: approvals).addRoutes(to: admin)
        ConfigSchemaRoutes(authenticator: authenticator, configs: configs, approvals: approvals).addRoutes(to: admin)
        KillSwitchRoutes(authenticator: authenticator, switches: KillSwitchStore(database: database, logger: logger), approvals: approvals)
            .addRoutes(to: admin)
        BlobRoutes(authenticator: authenticator, blobs: blobs, maxBlobBytes: configuration.maxBlobBytes).addRoutes(to: blobRoutes)
        PolicyRoutes(
            authenticator: authenticator, policies: policies, approvals: approvals,
            outbound: OutboundAddressPolicy(configuration: configuration)
        ).addRoutes(to: admin)
        AuditRoutes(authenticator: authenticator, audit: AuditLog(database: database, logger: logger)).addRoutes(to: admin)
        let webhooks = WebhookStore(database: database, encryption: dependencies.encryption, logger: logger)
        WebhookRoutes(authenticator: authenticator, webhooks: webhooks, outbound: OutboundAddressPolicy(configuration: configuration))
            .addRoutes(to: admin)
        let relays = RelayStore(database: database, encryption: dependencies.encryption, logger: logger)
        RelayRoutes(
            authenticator: authenticator, relays: relays,
            outbound: OutboundAddressPolicy(configuration: configuration), approvals: approvals
        ).addRoutes(to: admin)
        DebugTokenRoutes(authenticator: authenticator, debugTokens: DebugTokenStore(database: database, logger: logger), logger: logger)
            .addRoutes(to: admin)
        let devices = DeviceStore(database: database, logger: logger)
        DeviceRoutes(
            authenticator: authenticator, devices: devices, approvals: approvals,
            bans: DeviceBans(devices: devices, policies: policies, keys: deviceCheckKeys, deviceCheck: deviceCheck),
            attestation: AttestationReport(database: database, policies: policies, logger: logger))
            .addRoutes(to: admin)
        ApprovalRoutes(authenticator: authenticator, approvals: approvals).addRoutes(to: admin)
        PinRoutes(
            authenticator: authenticator, pins: PinStore(database: database, encryption: dependencies.encryption, logger: logger),
            approvals: approvals
        ).addRoutes(to: admin)
        let people = PeopleStore(database: database, logger: logger)
        AccountRoutes(
            authenticator: authenticator, accounts: accounts, people: people, approvals: approvals, dashboardOrigin: configuration.dashboardOrigin)
            .addRoutes(to: admin)

        // The dashboard: its page and assets, and the passkey ceremonies, on the admin origin.
        DashboardPageRoutes().addRoutes(to: parts.routes)
        DashboardAuthRoutes(
            accounts: accounts, people: people, relyingParty: configuration.dashboardOrigin.flatMap(Self.relyingParty(origin:)),
            clients: ClientAddressResolver(trustedProxies: configuration.trustedProxies)
        ).addRoutes(to: parts.group("dashboard/api", bodyLimit: 64 * 1024).add(middleware: failedCredentials))

        let producer = try KafkaProducer(configuration: dependencies.kafka, logger: logger)
        let relay = OutboxRelay(
            database: database, producer: producer, topics: KafkaTopicAdministrator(configuration: dependencies.kafka), logger: logger)
        // Without Kafka changes are kept in the outbox and published when it returns.
        parts.readiness = [ReadinessCheck(name: "kafka", impact: .degrading) { relay.isPublishing }]
        let dispatcher = WebhookDispatcher(
            webhooks: webhooks, outbound: OutboundHTTPClient(policy: OutboundAddressPolicy(configuration: configuration)),
            migrations: dependencies.migrations,
            interval: .milliseconds(500), logger: logger)
        let sealing = SealingAtStart(
            jobs: [
                .init(what: "blobs stored in clear", run: { try await blobs.sealStoredInClear() }),
                .init(what: "relay headers not bound to their upstream", run: { try await relays.bindUnboundHeaders() }),
            ], migrations: dependencies.migrations, logger: logger)
        parts.services = [producer, relay, sealing, dispatcher, validations]
        return parts
    }

    /// The dashboard's WebAuthn relying party: its RP ID is the origin's host.
    static func relyingParty(origin: String) -> WebAuthnRelyingParty? {
        guard let host = URLComponents(string: origin)?.host else { return nil }
        return WebAuthnRelyingParty(id: host, origins: [origin])
    }

    /// The key app storage ids are derived from. Derived from the master key in use when the app is
    /// registered; the id is stored then, so a later master key rotation does not move it.
    static func storageIDKey(masterKey: [UInt8]) -> SymmetricKey {
        PurposeKey.derive(from: masterKey, purpose: "sesame storage id")
    }
}

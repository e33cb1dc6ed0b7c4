import AppAttest
import ArgumentParser
import Foundation
import Hummingbird
import ServiceLifecycle
import SwiftASN1
import X509
import SesameAssertions
import SesameApple
import SesameConfiguration
import SesameEventBus
import SesameEvents
import SesameHTTP
import SesameKafka
import SesameServer
import SesameStorage
import SesameTokens

/// The `sesame-auth` service: challenges, App Attest attestation and assertions, tokens and JWKS,
/// and the verification endpoints the app's own backend calls.
public enum AuthService: SesameServiceDefinition {
    public static let name = "auth"
    public static var openAPIDocument: String { OpenAPIDocument.json }
    public static var errorCodes: [any ErrorCodes.Type] { [CommonErrorCode.self, AccessTokenErrorCode.self, AuthErrorCode.self] }
    public static let defaultPort = 8081

    /// The largest body any auth endpoint accepts: an attestation object is about 6 KiB.
    static let maxBodyBytes = 64 * 1024
    /// How long a challenge stays redeemable.
    static let challengeLifetime: Duration = .seconds(300)

    /// `rotate-signing-key`.
    public static var commands: [any ParsableCommand.Type] { [RotateSigningKeyCommand.self] }

    public static func parts(_ dependencies: ServiceDependencies) throws -> ServiceParts {
        let logger = dependencies.logger
        let database = dependencies.database
        let configuration = dependencies.configuration
        let signingKeys = SigningKeyStore(database: database, encryption: dependencies.encryption, logger: logger)
        let tokens = TokenAuthority(store: signingKeys, lifetimes: configuration.tokenLifetimes, signs: true, logger: logger)
        let limits = AuthLimits(
            admissionRate: configuration.attestAdmissionRate, attestRatePerClient: configuration.attestRatePerClient, database: database,
            logger: logger)
        let clients = ClientAddressResolver(trustedProxies: configuration.trustedProxies)
        let challenges = ChallengeStore(database: database, lifetime: challengeLifetime, purpose: "app", logger: logger)
        let policies = StoredPolicies()
        let apps = AppDirectory(database: database, policies: policies, logger: logger)
        let keys = AttestedKeyStore(database: database, logger: logger)
        let extraRoots = try extraRoots(configuration.appAttestExtraRootsPEM)
        let verifier = AppAttestVerifier(additionalRoots: extraRoots)
        let deviceCheckKeys = DeviceCheckKeys(database: database, encryption: dependencies.encryption, logger: logger)
        let deviceCheckDebts = DeviceCheckDebts(database: database, logger: logger)
        let deviceCheck = DeviceCheckClient(configuration: configuration)
        let assertions = AssertionCheck(keys: AssertionKeys(database: database, logger: logger), verifier: verifier)
        let gate = InstallGate(database: database, logger: logger)
        let outcomes = AttestationOutcomes()
        let ramps = AttestationRamps(database: database, policies: policies, logger: logger)
        let flows = AuthFlows(
            challenges: challenges, apps: apps,
            keys: keys, families: RefreshTokenFamilies(database: database, policies: policies, logger: logger),
            tokens: tokens, limits: limits, verifier: verifier, assertions: assertions,
            bans: DeviceBanCheck(keys: deviceCheckKeys, debts: deviceCheckDebts, deviceCheck: deviceCheck, logger: logger),
            receipts: ReceiptRedemptions(database: database, logger: logger), outcomes: outcomes, ramps: ramps,
            inProduction: configuration.environment == .production, logger: logger)

        var parts = ServiceParts()
        // Every auth endpoint takes small JSON bodies.
        let tiers = TierAdmission(
            challenges: challenges, apps: apps, debugTokens: DebugTokenStore(database: database, logger: logger), tokens: tokens, limits: limits,
            outcomes: outcomes, inProduction: configuration.environment == .production, logger: logger)
        let apiTokens = APITokenIssuer(
            apps: apps, gate: gate, tokens: tokens, limits: limits, logger: logger)
        let routes = AuthRoutes(flows: flows, tiers: tiers, apiTokens: apiTokens, limits: limits, clients: clients, tokens: tokens)
        routes.addRoutes(to: parts.group("v1/auth", bodyLimit: maxBodyBytes))
        routes.addWellKnownRoutes(to: parts.routes)
        let consumed = ConsumedAPITokens(database: database, logger: logger)
        VerifyRoutes(
            backendKeys: BackendKeyStore(database: database, logger: logger), consumed: consumed, tokens: tokens,
            assertions: assertions, gate: gate, limits: limits, logger: logger
        ).addRoutes(to: parts.group("v1/verify", bodyLimit: maxBodyBytes).add(
            middleware: FailedCredentialLimiter(
                // A valid backend key's 401s about the user's token or assertion under test are verdicts, not failed credentials.
                clients: clients, burst: configuration.failedCredentialsPerAddress, callerCredentialCodes: [AuthErrorCode.invalidBackendKey.rawValue])))

        let revocations = try KafkaBroadcastConsumer(
            configuration: dependencies.kafka, topics: [EventTopic.revocations], startPosition: .end, logger: logger)
        // Without Kafka a rotation reaches this instance at its next maintenance round instead.
        parts.readiness = [ReadinessCheck(name: "kafka", impact: .degrading) { revocations.isReceiving }]
        parts.services = [
            AuthMaintenance(tokens: tokens, signingKeys: signingKeys, challenges: challenges, consumedTokens: consumed, logger: logger),
            ReceiptRedeemer(
                redemptions: ReceiptRedemptions(database: database, logger: logger), apps: apps, keys: deviceCheckKeys,
                apple: AppAttestDataClient(configuration: configuration), verifier: AttestationReceiptVerifier(additionalRoots: extraRoots),
                interval: configuration.receiptRedemptionInterval, logger: logger),
            OwedDeviceChecks(
                debts: deviceCheckDebts, apps: apps, keys: deviceCheckKeys, deviceCheck: deviceCheck, interval: configuration.receiptRedemptionInterval,
                logger: logger),
            AttestationRampKeeper(
                outcomes: outcomes, ramps: ramps, database: database, interval: configuration.attestationRoundInterval, logger: logger),
            revocations,
            SigningKeyWatcher(
                events: EventStream(consumer: revocations, logger: logger), catchUps: revocations.reconnections, tokens: tokens, logger: logger),
        ]
        return parts
    }

    /// The certificates of a PEM bundle (configuration allows one only in development).
    static func extraRoots(_ pem: String?) throws -> [Certificate] {
        guard let pem else { return [] }
        return try PEMDocument.parseMultiple(pemString: pem).map { try Certificate(pemDocument: $0) }
    }
}

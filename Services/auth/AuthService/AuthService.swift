import AppAttest
import ArgumentParser
import Foundation
import Hummingbird
import ServiceLifecycle
import SwiftASN1
import X509
import SesameConfiguration
import SesameEventBus
import SesameEvents
import SesameHTTP
import SesameKafka
import SesameServer
import SesameTokens

/// The `sesame-auth` service: challenges, App Attest attestation and assertions, tokens and JWKS.
public enum AuthService: SesameServiceDefinition {
    public static let name = "auth"
    public static let defaultPort = 8081

    /// The largest body any auth endpoint accepts: an attestation object is about 6 KiB.
    static let maxBodyBytes = 64 * 1024
    /// How long a challenge stays redeemable.
    static let challengeLifetime: Duration = .seconds(300)

    /// Every auth endpoint takes small JSON bodies.
    public static func bodyLimits(_ configuration: ServiceConfiguration) -> [String: Int] { ["/v1/auth/": maxBodyBytes] }

    /// `rotate-signing-key`.
    public static var commands: [any ParsableCommand.Type] { [RotateSigningKeyCommand.self] }

    public static func configure(_ router: Router<SesameRequestContext>, dependencies: ServiceDependencies) throws -> [any Service] {
        let logger = dependencies.logger
        let database = dependencies.database
        let configuration = dependencies.configuration
        let signingKeys = SigningKeyStore(database: database, encryption: dependencies.encryption, logger: logger)
        let tokens = TokenAuthority(store: signingKeys, lifetimes: configuration.tokenLifetimes, signs: true, logger: logger)
        let limits = AuthLimits(admissionRate: configuration.attestAdmissionRate)
        let clients = ClientAddressResolver(trustedProxies: configuration.trustedProxies)
        let challenges = ChallengeStore(database: database, lifetime: challengeLifetime, logger: logger)
        let flows = AuthFlows(
            challenges: challenges, apps: AppDirectory(database: database, logger: logger),
            keys: AttestedKeyStore(database: database, logger: logger), families: RefreshTokenFamilies(database: database, logger: logger),
            tokens: tokens, limits: limits, verifier: AppAttestVerifier(additionalRoots: try extraRoots(configuration.appAttestExtraRootsPEM)),
            inProduction: configuration.environment == .production, logger: logger)

        let auth = router.group("v1/auth")
        auth.post("challenge") { request, context in
            try limits.challengePerClient.enforce(clients.limitKey(of: request, context: context))
            return try await flows.challenge()
        }
        auth.post("attest") { request, context in
            try limits.attestPerClient.enforce(clients.limitKey(of: request, context: context))
            return try await flows.attest(try await request.decode(as: AttestRequest.self, context: context))
        }
        auth.post("refresh") { request, context in
            try limits.refreshPerClient.enforce(clients.limitKey(of: request, context: context))
            return try await flows.refresh(try await request.decode(as: RefreshRequest.self, context: context))
        }
        let jwks: @Sendable (Request, SesameRequestContext) async throws -> Response = { _, _ in
            var headers = HTTPFields()
            headers[.contentType] = "application/json"
            // Verifiers may cache briefly; a rotated key is published before it signs anything.
            headers[.cacheControl] = "public, max-age=300"
            let body = try JSONEncoder().encode(try await tokens.jwks())
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
        }
        auth.get("jwks", use: jwks)
        router.get(".well-known/jwks.json", use: jwks)

        let revocations = try KafkaBroadcastConsumer(
            configuration: dependencies.kafka, topics: [EventTopic.revocations], startPosition: .end, logger: logger)
        // Without Kafka a rotation reaches this instance at its next maintenance round instead.
        dependencies.readiness.add(ReadinessCheck(name: "kafka", impact: .degrading) { revocations.isReceiving })
        return [
            AuthMaintenance(tokens: tokens, signingKeys: signingKeys, challenges: challenges, logger: logger),
            revocations,
            SigningKeyWatcher(events: EventStream(consumer: revocations, logger: logger), tokens: tokens, logger: logger),
        ]
    }

    /// The certificates of a PEM bundle (configuration allows one only in development).
    static func extraRoots(_ pem: String?) throws -> [Certificate] {
        guard let pem else { return [] }
        return try PEMDocument.parseMultiple(pemString: pem).map { try Certificate(pemDocument: $0) }
    }
}

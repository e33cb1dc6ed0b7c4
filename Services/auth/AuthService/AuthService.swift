import AppAttest
import Foundation
import Hummingbird
import ServiceLifecycle
import SwiftASN1
import X509
import SesameHTTP
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

    public static func configure(_ router: Router<SesameRequestContext>, dependencies: ServiceDependencies) throws -> [any Service] {
        let logger = dependencies.logger
        let database = dependencies.database
        let tokens = TokenAuthority(
            store: SigningKeyStore(database: database, encryption: dependencies.encryption, logger: logger), signs: true, logger: logger)
        let limits = AuthLimits()
        let challenges = ChallengeStore(database: database, lifetime: challengeLifetime, logger: logger)
        let flows = AuthFlows(
            challenges: challenges, apps: AppDirectory(database: database, logger: logger),
            keys: AttestedKeyStore(database: database, logger: logger), families: RefreshTokenFamilies(database: database, logger: logger),
            tokens: tokens, limits: limits, verifier: AppAttestVerifier(additionalRoots: try extraRoots(dependencies.configuration.appAttestExtraRootsPEM)),
            logger: logger)

        let auth = router.group("v1/auth").add(middleware: RequestLimitsMiddleware(maxBodyBytes: maxBodyBytes))
        auth.post("challenge") { request, context in
            try AuthLimits.enforce(limits.challengePerClient, key: ClientAddress.of(request, context: context))
            return try await flows.challenge()
        }
        auth.post("attest") { request, context in
            try AuthLimits.enforce(limits.attestPerClient, key: ClientAddress.of(request, context: context))
            return try await flows.attest(try await request.decode(as: AttestRequest.self, context: context))
        }
        auth.post("refresh") { request, context in
            try await flows.refresh(try await request.decode(as: RefreshRequest.self, context: context))
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

        return [AuthMaintenance(tokens: tokens, challenges: challenges, logger: logger)]
    }

    /// The certificates of a PEM bundle (configuration allows one only in development).
    static func extraRoots(_ pem: String?) throws -> [Certificate] {
        guard let pem else { return [] }
        return try PEMDocument.parseMultiple(pemString: pem).map { try Certificate(pemDocument: $0) }
    }
}

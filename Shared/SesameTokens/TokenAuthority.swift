import Crypto
import Foundation
import JWTKit
import Logging
import SesameConfiguration
import SesameDomain
import SesameStorage

/// Signs and verifies Sesame's ES256 tokens with the keys in `SigningKeyStore`, and publishes the
/// JWKS. Keys are loaded on first use, reloaded by `reload()` (periodically and when a rotation
/// event arrives), and also when a token names a `kid` not yet known (another instance rotated).
public actor TokenAuthority {
    /// The token pair the app receives.
    public struct TokenPair: Sendable {
        public let accessToken: String
        public let refreshToken: String
        public let access: AccessTokenClaims
        public let refresh: RefreshTokenClaims
    }

    /// Whom tokens are for.
    public struct Subject: Sendable, Equatable {
        /// The attested key id (base64url); for the other tiers, an id of the debug token or install.
        public var keyID: String
        public var appID: String
        public var environment: String
        public var appVersion: String?
        public var tier: TrustTier

        public init(keyID: String, appID: String, environment: String, appVersion: String?, tier: TrustTier = .attested) {
            self.keyID = keyID
            self.appID = appID
            self.environment = environment
            self.appVersion = appVersion
            self.tier = tier
        }
    }

    public nonisolated let lifetimes: TokenLifetimes
    /// Advances whenever the set of verifying keys changes (a key added, expired or revoked).
    public nonisolated let keySetGeneration = KeySetGeneration()
    private let store: SigningKeyStore
    private let signs: Bool
    private let logger: Logger
    private var keys = JWTKeyCollection()
    /// The keys this authority may sign with, by activation time.
    private var signers: [(kid: String, activatesAt: Date)] = []
    private var publicKeys: [(kid: String, key: P256.Signing.PublicKey)] = []
    private var lastLoad: ContinuousClock.Instant?
    /// When a reload last started, successful or not: the unknown-kid rate limit counts attempts,
    /// so a database outage does not let every unknown `kid` through to the pool.
    private var lastReloadAttempt: ContinuousClock.Instant?
    /// An unknown `kid` triggers at most one reload per this interval, so garbage tokens cannot
    /// turn into a database load (one query a second per instance at most). A token naming an
    /// unknown key that arrives sooner waits for the next allowed reload instead of being refused:
    /// a key made just after the last reload (a fresh deployment, `rotate-signing-key --now`)
    /// must not turn away the first installs it signs for.
    private let unknownKidReloadInterval: Duration = .seconds(1)
    /// The reload that tokens naming an unknown key are waiting for, shared by all of them.
    private var unknownKidReload: Task<Void, Never>?
    /// How long a request waits for that reload: the pool would hold it for a minute while
    /// PostgreSQL is away.
    private let unknownKidReloadTimeout: Duration = .seconds(2)
    /// How long a request waits for the first load, for the same reason.
    private let firstLoadTimeout: Duration = .seconds(5)

    /// - Parameter signs: true in auth (creates and decrypts the active key); false in verifiers.
    public init(store: SigningKeyStore, lifetimes: TokenLifetimes = TokenLifetimes(), signs: Bool, logger: Logger) {
        self.store = store
        self.lifetimes = lifetimes
        self.signs = signs
        self.logger = logger
    }

    /// Loads the usable keys from PostgreSQL (creating the first one when this authority signs).
    public func reload() async throws {
        lastReloadAttempt = .now
        if signs { try await store.ensureActiveKey() }
        let loaded = try await store.usableKeys(decryptSigning: signs)
        let collection = JWTKeyCollection()
        var signers: [(kid: String, activatesAt: Date)] = []
        for key in loaded {
            if let privateKey = key.privateKey {
                await collection.add(ecdsa: try ES256PrivateKey(backing: privateKey), kid: JWKIdentifier(string: key.kid))
                signers.append((key.kid, key.activatesAt))
            } else {
                await collection.add(ecdsa: try ES256PublicKey(backing: key.publicKey), kid: JWKIdentifier(string: key.kid))
            }
        }
        keys = collection
        self.signers = signers
        let before = Set(publicKeys.map(\.kid))
        publicKeys = loaded.map { ($0.kid, $0.publicKey) }
        if Set(publicKeys.map(\.kid)) != before || lastLoad == nil { keySetGeneration.advance() }
        lastLoad = .now
    }

    private func loadIfNeeded() async throws {
        guard lastLoad == nil else { return }
        do {
            try await withTimeout(firstLoadTimeout) { try await self.reload() }
        } catch {
            logger.warning("could not load the token signing keys", metadata: ["error.type": "\(type(of: error))"])
            throw error
        }
    }

    /// The key that signs at `now`: the newest one already active. Before the first activation
    /// (clocks may differ slightly from PostgreSQL's) the earliest one.
    private func signer(at now: Date) -> String? {
        (signers.last { $0.activatesAt <= now } ?? signers.first)?.kid
    }

    /// The id of the key that signs tokens issued now.
    public func signingKeyID(now: Date = Date()) async throws -> String? {
        try await loadIfNeeded()
        return signer(at: now)
    }

    /// A new access and refresh token for `subject` (an attested install: only those hold refresh
    /// tokens), in refresh-token `family` at `generation`.
    public func issue(for subject: Subject, family: UUID, generation: Int64, now: Date = Date()) async throws -> TokenPair {
        let activeKid = try await activeSigner(at: now)
        let access = accessClaims(for: subject, now: now)
        let refresh = RefreshTokenClaims(
            subject: .init(value: subject.keyID), appID: subject.appID, environment: subject.environment,
            appVersion: subject.appVersion, family: family.uuidString, generation: generation, issuedAt: .init(value: now),
            expiration: .init(value: now.addingTimeInterval(TimeInterval(lifetimes.refresh.wholeSeconds))),
            id: .init(value: UUID().uuidString), type: RefreshTokenClaims.typeValue, audience: .init(value: RefreshTokenClaims.audienceValue))
        let kid = JWKIdentifier(string: activeKid)
        return TokenPair(
            accessToken: try await sign(access, kid: kid), refreshToken: try await sign(refresh, kid: kid), access: access, refresh: refresh)
    }

    /// A new access token alone for `subject`, for the tiers that have no refresh token (a debug
    /// token or an unattested install exchanges again when it expires).
    public func issueAccessToken(for subject: Subject, now: Date = Date()) async throws -> (token: String, claims: AccessTokenClaims) {
        let activeKid = try await activeSigner(at: now)
        let claims = accessClaims(for: subject, now: now)
        return (try await sign(claims, kid: JWKIdentifier(string: activeKid)), claims)
    }

    /// A token for the app's own API named `audience`, for the install an access token names
    /// (`access`), living `lifetime`, bound to `binding` (a base64url SHA-256) when given, single
    /// use when `limitedUse`.
    public func issueAPIToken(
        for access: AccessTokenClaims, audience: String, binding: String?, limitedUse: Bool = false, lifetime: Duration, now: Date = Date()
    ) async throws -> (token: String, claims: APITokenClaims) {
        let activeKid = try await activeSigner(at: now)
        let claims = APITokenClaims(
            subject: access.subject, appID: access.appID, environment: access.environment, appVersion: access.appVersion,
            tier: access.trustTier, audience: .init(value: audience), issuedAt: .init(value: now),
            expiration: .init(value: now.addingTimeInterval(TimeInterval(lifetime.wholeSeconds))), id: .init(value: UUID().uuidString),
            type: APITokenClaims.typeValue, binding: binding, limitedUse: limitedUse ? true : nil)
        return (try await sign(claims, headerType: APITokenClaims.headerType, kid: JWKIdentifier(string: activeKid)), claims)
    }

    /// The key that signs at `now`, loading the keys first (and again when none signs yet).
    private func activeSigner(at now: Date) async throws -> String {
        try await loadIfNeeded()
        if signer(at: now) == nil { try await reload() }
        guard let kid = signer(at: now) else { throw TokenError("no signing key") }
        return kid
    }

    private func accessClaims(for subject: Subject, now: Date) -> AccessTokenClaims {
        AccessTokenClaims(
            subject: .init(value: subject.keyID), appID: subject.appID, environment: subject.environment,
            appVersion: subject.appVersion, issuedAt: .init(value: now),
            expiration: .init(value: now.addingTimeInterval(TimeInterval(lifetimes.access.wholeSeconds))),
            id: .init(value: UUID().uuidString), type: AccessTokenClaims.typeValue, audience: .init(value: AccessTokenClaims.audienceValue),
            tier: subject.tier)
    }

    private func sign<Claims: SesameTokenClaims>(_ claims: Claims, kid: JWKIdentifier) async throws -> String {
        try await sign(claims, headerType: Claims.headerType, kid: kid)
    }

    private func sign(_ claims: some JWTPayload, headerType: String, kid: JWKIdentifier) async throws -> String {
        var header = JWTHeader()
        header.typ = headerType
        return try await keys.sign(claims, kid: kid, header: header)
    }

    /// The claims of a valid, unexpired access token.
    /// - Throws: `TokenError` when the token is not acceptable; other errors when the keys could not
    ///   be loaded (a server problem, not the client's).
    public func verifyAccessToken(_ token: String) async throws -> AccessTokenClaims {
        try await verify(token, as: AccessTokenClaims.self)
    }

    /// The claims of a validly signed, unexpired refresh token (whether it is still current is the
    /// refresh-token family's business). Throws as `verifyAccessToken` does.
    public func verifyRefreshToken(_ token: String) async throws -> RefreshTokenClaims {
        try await verify(token, as: RefreshTokenClaims.self)
    }

    /// The claims of a valid, unexpired API token (whether a single-use one was consumed is the
    /// caller's business). Throws as `verifyAccessToken` does.
    public func verifyAPIToken(_ token: String) async throws -> APITokenClaims {
        try await verify(token, as: APITokenClaims.self, headerType: APITokenClaims.headerType, requiresHeaderType: true)
    }

    private func verify<Claims: SesameTokenClaims>(_ token: String, as _: Claims.Type) async throws -> Claims {
        try await verify(token, as: Claims.self, headerType: Claims.headerType, requiresHeaderType: Claims.requiresHeaderType)
    }

    private func verify<Claims: JWTPayload>(_ token: String, as _: Claims.Type, headerType: String, requiresHeaderType: Bool) async throws -> Claims {
        guard token.utf8.count <= 4096 else { throw TokenError("token too long") }
        try await loadIfNeeded()
        let header = try? DefaultJWTParser().parse(Array(token.utf8), as: Claims.self).header
        switch header?.typ {
        case headerType?: break
        case nil where !requiresHeaderType: break
        default: throw TokenError("the header typ is not \(headerType)")
        }
        if let kid = header?.kid, !publicKeys.contains(where: { $0.kid == kid }) {
            await reloadForUnknownKid()
        }
        do {
            return try await keys.verify(token, as: Claims.self)
        } catch {
            throw TokenError("\(error)")
        }
    }

    /// Waits for a reload that starts no sooner than `unknownKidReloadInterval` after the last
    /// attempt, shared by every token waiting for one, and finished within `unknownKidReloadTimeout`;
    /// on failure the keys stay as they were and the token is judged by them (refused), rather
    /// than the request failing with the database.
    private func reloadForUnknownKid() async {
        if let pending = unknownKidReload { return await pending.value }
        let wait = lastReloadAttempt.map { unknownKidReloadInterval - (ContinuousClock.now - $0) } ?? .zero
        let reload = Task { await self.reloadForUnknownKid(after: wait) }
        unknownKidReload = reload
        await reload.value
    }

    private func reloadForUnknownKid(after wait: Duration) async {
        // Cleared here, on the actor, before any waiter resumes: a later unknown kid starts anew.
        defer { unknownKidReload = nil }
        if wait > .zero { try? await Task.sleep(for: wait) }
        do {
            try await withTimeout(unknownKidReloadTimeout) { try await self.reload() }
        } catch {
            logger.warning("could not reload signing keys for an unknown key id", metadata: ["error.type": "\(type(of: error))"])
        }
    }

    /// The public keys that verify Sesame's tokens, as a JSON Web Key Set.
    public func jwks() async throws -> JWKS {
        try await loadIfNeeded()
        return JWKS(
            keys: try publicKeys.map { kid, key in
                let parameters = try ES256PublicKey(backing: key).parameters
                return JWK.ecdsa(.es256, identifier: JWKIdentifier(string: kid), x: parameters?.x, y: parameters?.y, curve: .p256)
            })
    }
}

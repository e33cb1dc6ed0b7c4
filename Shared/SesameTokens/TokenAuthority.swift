import Crypto
import Foundation
import JWTKit
import Logging
import Metrics
import SesameConfiguration
import SesameDomain
import SesameStorage
import Synchronization

/// Signs and verifies Sesame's tokens with the keys in `SigningKeyStore`, and publishes the JWKS.
/// Access and API tokens are ES256, for anyone holding the JWKS; refresh tokens, which auth alone
/// reads, are HS256 under a key derived from the signing key (`RefreshTokenKey`). Keys are loaded
/// on first use, reloaded by `reload()` (periodically and when a rotation event arrives), and also
/// when a token names a `kid` not yet known (another instance rotated).
///
/// The actor runs the loads; signing and verifying read the keys loaded last (`KeySet`) and run on
/// the caller's task, so requests are neither queued on one executor nor hopped to it.
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
    /// The keys loaded last; nil before the first load.
    private nonisolated let keySet = Mutex<KeySet?>(nil)
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
        let loaded = try KeySet(try await store.usableKeys(decryptSigning: signs))
        let before = keySet.withLock { keySet in
            defer { keySet = loaded }
            return keySet.map { Set($0.verifiers.keys) }
        }
        if before != Set(loaded.verifiers.keys) { keySetGeneration.advance() }
        lastLoad = .now
        if signs { recordSigningKeyAge(loaded) }
    }

    /// `sesame_auth_signing_key_activated_timestamp_seconds` (when the key that signs now started
    /// signing, Unix time) beside `sesame_auth_signing_key_rotation_seconds` (how long a key signs):
    /// the alert on an overdue rotation compares `time()` with their sum, so it keeps firing while
    /// reloads (and with them this gauge) have stopped.
    private nonisolated func recordSigningKeyAge(_ keys: KeySet, now: Date = Date()) {
        guard let signer = keys.signer(at: now) else { return }
        Gauge(label: "sesame_auth_signing_key_activated_timestamp_seconds").record(signer.activatesAt.timeIntervalSince1970)
        Gauge(label: "sesame_auth_signing_key_rotation_seconds").record(Double(lifetimes.signingKeyRotation.wholeSeconds))
    }

    /// The keys loaded last, loading them first if none were.
    private nonisolated func currentKeys() async throws -> KeySet {
        if let keys = keySet.withLock({ $0 }) { return keys }
        try await loadIfNeeded()
        guard let keys = keySet.withLock({ $0 }) else { throw TokenError("the signing keys are not loaded") }
        return keys
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

    /// The id of the key that signs tokens issued now.
    public nonisolated func signingKeyID(now: Date = Date()) async throws -> String? {
        try await currentKeys().signer(at: now)?.kid
    }

    /// A new access and refresh token for `subject` (an attested install: only those hold refresh
    /// tokens), in refresh-token `family` at `generation`.
    public nonisolated func issue(for subject: Subject, family: UUID, generation: Int64, now: Date = Date()) async throws -> TokenPair {
        let signer = try await activeSigner(at: now)
        let access = accessClaims(for: subject, now: now)
        let refresh = RefreshTokenClaims(
            subject: .init(value: subject.keyID), appID: subject.appID, environment: subject.environment,
            appVersion: subject.appVersion, family: family.uuidString, generation: generation, issuedAt: .init(value: now),
            expiration: .init(value: now.addingTimeInterval(TimeInterval(lifetimes.refresh.wholeSeconds))),
            id: .init(value: UUID().uuidString), type: RefreshTokenClaims.typeValue, audience: .init(value: RefreshTokenClaims.audienceValue))
        return TokenPair(
            accessToken: try signer.sign(access), refreshToken: try signer.authenticate(refresh), access: access, refresh: refresh)
    }

    /// A new access token alone for `subject`, for the tiers that have no refresh token (a debug
    /// token or an unattested install exchanges again when it expires).
    public nonisolated func issueAccessToken(for subject: Subject, now: Date = Date()) async throws -> (token: String, claims: AccessTokenClaims) {
        let signer = try await activeSigner(at: now)
        let claims = accessClaims(for: subject, now: now)
        return (try signer.sign(claims), claims)
    }

    /// A token for the app's own API named `audience`, for the install an access token names
    /// (`access`), living `lifetime`, bound to `binding` (a base64url SHA-256) when given, single
    /// use when `limitedUse`.
    public nonisolated func issueAPIToken(
        for access: AccessTokenClaims, audience: String, binding: String?, limitedUse: Bool = false, lifetime: Duration, now: Date = Date()
    ) async throws -> (token: String, claims: APITokenClaims) {
        let now = Self.wholeSecond(now)
        let signer = try await activeSigner(at: now)
        let claims = APITokenClaims(
            subject: access.subject, appID: access.appID, environment: access.environment, appVersion: access.appVersion,
            tier: access.trustTier, audience: .init(value: audience), issuedAt: .init(value: now),
            expiration: .init(value: now.addingTimeInterval(TimeInterval(lifetime.wholeSeconds))), id: .init(value: UUID().uuidString),
            type: APITokenClaims.typeValue, binding: binding, limitedUse: limitedUse ? true : nil)
        return (try signer.sign(claims), claims)
    }

    /// `now` to the second before, for API tokens: JWT's `iat` and `exp` are NumericDates, and the
    /// strict verifiers of the app's own backends refuse fractional ones. Down, not to the nearest:
    /// a token must never look issued after an emergency revocation it preceded (one issued in the
    /// same second after it is refused: when in doubt, refuse). Access tokens, which Sesame itself
    /// checks against revocations, keep their fraction, so a token issued just after a revocation
    /// is never mistaken for one before it.
    static func wholeSecond(_ now: Date) -> Date {
        Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down))
    }

    /// The key that signs at `now`, loading the keys first (and again when none signs yet).
    private nonisolated func activeSigner(at now: Date) async throws -> KeySet.Signer {
        if let signer = try await currentKeys().signer(at: now) { return signer }
        try await reload()
        guard let signer = try await currentKeys().signer(at: now) else { throw TokenError("no signing key") }
        return signer
    }

    private nonisolated func accessClaims(for subject: Subject, now: Date) -> AccessTokenClaims {
        AccessTokenClaims(
            subject: .init(value: subject.keyID), appID: subject.appID, environment: subject.environment,
            appVersion: subject.appVersion, issuedAt: .init(value: now),
            expiration: .init(value: now.addingTimeInterval(TimeInterval(lifetimes.access.wholeSeconds))),
            id: .init(value: UUID().uuidString), type: AccessTokenClaims.typeValue, audience: .init(value: AccessTokenClaims.audienceValue),
            tier: subject.tier)
    }

    /// The claims of a valid, unexpired access token.
    /// - Throws: `TokenError` when the token is not acceptable; other errors when the keys could not
    ///   be loaded (a server problem, not the client's).
    public nonisolated func verifyAccessToken(_ token: String) async throws -> AccessTokenClaims {
        try await verify(token, as: AccessTokenClaims.self, accepting: [.es256])
    }

    /// The claims of a validly signed, unexpired refresh token (whether it is still current is the
    /// refresh-token family's business). Throws as `verifyAccessToken` does. Only an authority that
    /// signs (auth) reads the refresh tokens it makes (HS256); ES256 ones, made before, are read
    /// until they expire.
    public nonisolated func verifyRefreshToken(_ token: String) async throws -> RefreshTokenClaims {
        try await verify(token, as: RefreshTokenClaims.self, accepting: [.hs256, .es256])
    }

    /// The claims of a valid, unexpired API token (whether a single-use one was consumed is the
    /// caller's business). Throws as `verifyAccessToken` does.
    public nonisolated func verifyAPIToken(_ token: String) async throws -> APITokenClaims {
        try await verify(
            token, as: APITokenClaims.self, headerType: APITokenClaims.headerType, requiresHeaderType: true, accepting: [.es256])
    }

    private nonisolated func verify<Claims: SesameTokenClaims>(
        _ token: String, as _: Claims.Type, accepting algorithms: Set<CompactJWS.Algorithm>
    ) async throws -> Claims {
        try await verify(
            token, as: Claims.self, headerType: Claims.headerType, requiresHeaderType: Claims.requiresHeaderType, accepting: algorithms)
    }

    /// - Parameter algorithms: those this kind of token may use; the header only picks among them.
    private nonisolated func verify<Claims: JWTPayload>(
        _ token: String, as _: Claims.Type, headerType: String, requiresHeaderType: Bool, accepting algorithms: Set<CompactJWS.Algorithm>
    ) async throws -> Claims {
        guard token.utf8.count <= 4096 else { throw TokenError("token too long") }
        var keys = try await currentKeys()
        let parsed: CompactJWS.Parsed
        do {
            parsed = try CompactJWS.parse(token, accepting: algorithms)
        } catch {
            throw TokenError("\(error)")
        }
        switch parsed.header.typ {
        case headerType?: break
        case nil where !requiresHeaderType: break
        default: throw TokenError("the header typ is not \(headerType)")
        }
        guard let kid = parsed.header.kid else { throw TokenError("the header names no key") }
        // A key of either algorithm is a key the store lists: only a kid it does not is news.
        if keys.verifiers[kid] == nil {
            await reloadForUnknownKid()
            keys = try await currentKeys()
        }
        guard let key = keys.verificationKey(kid: kid, for: parsed.algorithm) else { throw TokenError("signed by an unknown key") }
        guard CompactJWS.isSigned(parsed, by: key) else { throw TokenError("the signature does not verify") }
        do {
            let claims = try CompactJWS.claims(of: parsed, as: Claims.self)
            try await claims.verify(using: JWSVerifier(key: key))
            return claims
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
    public nonisolated func jwks() async throws -> JWKS {
        JWKS(
            keys: try await currentKeys().publicKeys.map { kid, key in
                let parameters = try ES256PublicKey(backing: key).parameters
                return JWK.ecdsa(.es256, identifier: JWKIdentifier(string: kid), x: parameters?.x, y: parameters?.y, curve: .p256)
            })
    }
}

/// The keys one load found: those that sign (auth's, decrypted) and every one that verifies.
struct KeySet: Sendable {
    /// A key that signs, with the header segment of each kind of token it makes encoded once. The
    /// algorithm goes with the kind: ES256 for access and API tokens, HS256 for refresh tokens.
    struct Signer: Sendable {
        let kid: String
        let activatesAt: Date
        let key: P256.Signing.PrivateKey
        let refreshTokenKey: SymmetricKey
        private let accessHeader: String
        private let apiHeader: String
        private let refreshHeader: String

        init(kid: String, activatesAt: Date, key: P256.Signing.PrivateKey, refreshTokenKey: SymmetricKey) throws {
            self.kid = kid
            self.activatesAt = activatesAt
            self.key = key
            self.refreshTokenKey = refreshTokenKey
            accessHeader = try CompactJWS.headerSegment(.es256, kid: kid, typ: AccessTokenClaims.headerType)
            apiHeader = try CompactJWS.headerSegment(.es256, kid: kid, typ: APITokenClaims.headerType)
            refreshHeader = try CompactJWS.headerSegment(.hs256, kid: kid, typ: RefreshTokenClaims.headerType)
        }

        func sign(_ claims: AccessTokenClaims) throws -> String {
            try CompactJWS.sign(claims, headerSegment: accessHeader, key: key)
        }

        func sign(_ claims: APITokenClaims) throws -> String {
            try CompactJWS.sign(claims, headerSegment: apiHeader, key: key)
        }

        func authenticate(_ claims: RefreshTokenClaims) throws -> String {
            try CompactJWS.authenticate(claims, headerSegment: refreshHeader, key: refreshTokenKey)
        }
    }

    /// By activation time.
    let signers: [Signer]
    let verifiers: [String: P256.Signing.PublicKey]
    /// The refresh-token key of every key that verifies, where the keys were decrypted (auth).
    let refreshTokenKeys: [String: SymmetricKey]
    /// In the order the store listed them, for the JWKS.
    let publicKeys: [(kid: String, key: P256.Signing.PublicKey)]

    init(_ loaded: [SigningKey]) throws {
        signers = try loaded.compactMap { key in
            guard let privateKey = key.privateKey, let refreshTokenKey = key.refreshTokenKey else { return nil }
            return try Signer(kid: key.kid, activatesAt: key.activatesAt, key: privateKey, refreshTokenKey: refreshTokenKey)
        }
        verifiers = Dictionary(loaded.map { ($0.kid, $0.publicKey) }, uniquingKeysWith: { first, _ in first })
        refreshTokenKeys = Dictionary(
            loaded.compactMap { key in key.refreshTokenKey.map { (key.kid, $0) } }, uniquingKeysWith: { first, _ in first })
        publicKeys = loaded.map { ($0.kid, $0.publicKey) }
    }

    /// The key `kid` that checks tokens of `algorithm`: its public key for ES256, its refresh-token
    /// key for HS256; nil when this set holds no such key.
    func verificationKey(kid: String, for algorithm: CompactJWS.Algorithm) -> CompactJWS.VerificationKey? {
        switch algorithm {
        case .es256: verifiers[kid].map { .es256($0) }
        case .hs256: refreshTokenKeys[kid].map { .hs256($0) }
        }
    }

    /// The key that signs at `now`: the newest one already active. Before the first activation
    /// (clocks may differ slightly from PostgreSQL's) the earliest one.
    func signer(at now: Date) -> Signer? {
        signers.last { $0.activatesAt <= now } ?? signers.first
    }
}

import Crypto
import Foundation
import Logging
import PostgresNIO
import SesameConfiguration
import SesameDomain
import SesameEncryption
import SesameEventBus
import SesameEvents
import SesameStorage

/// A token signing key as stored.
///
/// A key is published (in the JWKS) from its creation, signs from `activatesAt` until a newer key
/// activates, and verifies until its `verify_until` has passed.
public struct SigningKey: Sendable {
    /// The key id tokens carry in their header.
    public let kid: String
    public let publicKey: P256.Signing.PublicKey
    /// Present while the key signs or is about to, and only where the store may decrypt it.
    public let privateKey: P256.Signing.PrivateKey?
    /// The key that authenticates the refresh tokens made under this one, for as long as it
    /// verifies; only where the store may decrypt it (auth).
    let refreshTokenKey: SymmetricKey?
    /// When the key starts signing (in the future for a key published ahead of use).
    public let activatesAt: Date
}

/// What a rotation did.
public struct SigningKeyRotation: Sendable {
    /// The new key's id.
    public let kid: String
    /// When the new key starts signing.
    public let activatesAt: Date
    /// Until when the keys it replaced verify the tokens they signed.
    public let previousVerifyUntil: Date
}

/// Token signing keys in PostgreSQL (`signing_keys`): ES256 keys whose private parts are sealed with
/// the envelope encryption under the master key, bound to their `kid`.
public struct SigningKeyStore: Sendable {
    let database: Database
    let encryption: EnvelopeEncryption
    let logger: Logger

    /// Serializes key creation and rotation across every auth instance.
    static let advisoryLockID: Int64 = 0x7369_676E_6B65_7973  // "signkeys"

    public init(database: Database, encryption: EnvelopeEncryption, logger: Logger) {
        self.database = database
        self.encryption = encryption
        self.logger = logger
    }


    /// Every key that still verifies, oldest activation first.
    /// - Parameter decryptSigning: whether to open the private parts (only auth signs): kept for
    ///   the keys that sign now or will, and turned into the refresh-token key of every key.
    public func usableKeys(decryptSigning: Bool) async throws -> [SigningKey] {
        let rows = try await database.client.query(
            """
            SELECT kid, public_key, private_key_ciphertext, activates_at, retired_at IS NULL OR retired_at > now()
            FROM signing_keys WHERE verify_until IS NULL OR verify_until > now() ORDER BY activates_at, created_at
            """, logger: logger)
        var keys: [SigningKey] = []
        for try await (kid, publicKey, sealed, activatesAt, maySign) in rows.decode((String, Data, Data, Date, Bool).self) {
            var privateKey: P256.Signing.PrivateKey?
            var refreshTokenKey: SymmetricKey?
            if decryptSigning {
                do {
                    let raw = try encryption.open(sealed, context: SealingContext.signingKey(kid: kid))
                    let opened = try P256.Signing.PrivateKey(rawRepresentation: raw)
                    // A retired key still reads the refresh tokens it made until it stops
                    // verifying, but keeps no private part that could sign.
                    refreshTokenKey = RefreshTokenKey.derive(from: opened, kid: kid)
                    if maySign { privateKey = opened }
                } catch let error where !maySign {
                    // Only its refresh tokens are lost (their installs attest again); the keys
                    // that sign still load.
                    logger.error(
                        "cannot open a retired token signing key: its refresh tokens are refused",
                        metadata: ["kid": "\(kid)", "error.type": "\(type(of: error))"])
                }
            }
            keys.append(
                SigningKey(
                    kid: kid, publicKey: try P256.Signing.PublicKey(x963Representation: publicKey), privateKey: privateKey,
                    refreshTokenKey: refreshTokenKey, activatesAt: activatesAt))
        }
        return keys
    }

    /// Creates the first key when none is current (several instances may race; one wins).
    public func ensureActiveKey() async throws {
        try await database.client.withTransaction(logger: logger) { connection in
            try await lock(connection)
            guard try await newestCurrentKeyIsDue(within: nil, on: connection) else { return }
            let (kid, _) = try await insertKey(activatingAfter: .zero, on: connection)
            logger.info("created the first token signing key", metadata: ["kid": "\(kid)"])
        }
    }

    /// Replaces the current key by a new one that is published at once and signs after `lead`.
    ///
    /// - Parameters:
    ///   - lead: how long verifiers have to learn the new key before tokens signed by it appear
    ///     (JWKS caches must have expired); zero signs at once.
    ///   - verifyRetiredFor: how long the replaced keys verify after they stop signing (the longest
    ///     token lifetime), or nil to stop them verifying now, refusing every token they signed (a
    ///     compromised key).
    @discardableResult
    public func rotate(activatingAfter lead: Duration, verifyRetiredFor: Duration?) async throws -> SigningKeyRotation {
        try await database.client.withTransaction(logger: logger) { connection in
            try await lock(connection)
            return try await rotate(activatingAfter: lead, verifyRetiredFor: verifyRetiredFor, on: connection)
        }
    }

    /// Rotates when the newest key started signing at least `interval` ago (and no successor is
    /// already waiting); nil when not due. Safe to call from every instance.
    @discardableResult
    public func rotateIfDue(every interval: Duration, activatingAfter lead: Duration, verifyRetiredFor: Duration) async throws
        -> SigningKeyRotation?
    {
        try await database.client.withTransaction(logger: logger) { connection in
            try await lock(connection)
            guard try await newestCurrentKeyIsDue(within: interval, on: connection) else { return nil }
            return try await rotate(activatingAfter: lead, verifyRetiredFor: verifyRetiredFor, on: connection)
        }
    }

    private func lock(_ connection: PostgresConnection) async throws {
        try await connection.query("SELECT pg_advisory_xact_lock(\(Self.advisoryLockID))", logger: logger)
    }

    /// Whether there is no current key (`within` nil), or the newest one activated more than
    /// `within` ago.
    private func newestCurrentKeyIsDue(within interval: Duration?, on connection: PostgresConnection) async throws -> Bool {
        let rows = try await connection.query(
            "SELECT activates_at <= now() - make_interval(secs => \((interval ?? .zero).wholeSeconds)) FROM signing_keys WHERE retired_at IS NULL",
            logger: logger)
        for try await isOld in rows.decode(Bool.self) { return interval != nil && isOld }
        return true
    }

    private func rotate(activatingAfter lead: Duration, verifyRetiredFor: Duration?, on connection: PostgresConnection) async throws
        -> SigningKeyRotation
    {
        let leadSeconds = lead.wholeSeconds
        let previousVerifyUntil: Date
        if let verifyRetiredFor {
            // Every key still signing then stops when the new one starts (a key waiting to start
            // never will), and verifies the tokens it signed until they have expired.
            let rows = try await connection.query(
                """
                WITH change AS (SELECT now() + make_interval(secs => \(leadSeconds)) AS handover)
                UPDATE signing_keys SET retired_at = change.handover,
                    verify_until = change.handover + make_interval(secs => \(verifyRetiredFor.wholeSeconds))
                FROM change WHERE retired_at IS NULL OR retired_at > change.handover
                RETURNING verify_until
                """, logger: logger)
            var latest = Date()
            for try await until in rows.decode(Date.self) { latest = max(latest, until) }
            previousVerifyUntil = latest
        } else {
            let rows = try await connection.query(
                """
                UPDATE signing_keys SET retired_at = LEAST(COALESCE(retired_at, now()), now()), verify_until = now()
                WHERE verify_until IS NULL OR verify_until > now() RETURNING verify_until
                """, logger: logger)
            var latest = Date()
            for try await until in rows.decode(Date.self) { latest = until }
            previousVerifyUntil = latest
        }
        let (kid, activatesAt) = try await insertKey(activatingAfter: lead, on: connection)
        try await Outbox.append(
            EventEnvelope(appID: nil, event: .signingKeyRotated(SigningKeyRotated(kid: kid))), on: connection, logger: logger)
        logger.notice(
            "rotated the token signing key",
            metadata: [
                "kid": "\(kid)", "activates_at": "\(activatesAt)", "previous_keys_revoked": "\(verifyRetiredFor == nil)",
            ])
        return SigningKeyRotation(kid: kid, activatesAt: activatesAt, previousVerifyUntil: previousVerifyUntil)
    }

    private func insertKey(activatingAfter lead: Duration, on connection: PostgresConnection) async throws -> (String, Date) {
        let privateKey = P256.Signing.PrivateKey()
        let kid = Base64.urlEncode((0..<12).map { _ in UInt8.random(in: 0...255) })
        let sealed = Data(try encryption.seal(privateKey.rawRepresentation, context: SealingContext.signingKey(kid: kid)))
        let publicKey = Data(privateKey.publicKey.x963Representation)
        let rows = try await connection.query(
            """
            INSERT INTO signing_keys (kid, algorithm, public_key, private_key_ciphertext, activates_at)
            VALUES (\(kid), 'ES256', \(publicKey), \(sealed), now() + make_interval(secs => \(lead.wholeSeconds)))
            RETURNING activates_at
            """, logger: logger)
        for try await activatesAt in rows.decode(Date.self) { return (kid, activatesAt) }
        throw TokenError("the new signing key was not stored")
    }
}

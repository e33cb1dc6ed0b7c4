import Crypto
import Foundation
import Logging
import PostgresNIO
import SesameDomain
import SesameEncryption
import SesameEventBus
import SesameEvents
import SesameStorage

/// A token signing key as stored: the public part always, the private part while it signs.
public struct SigningKey: Sendable {
    /// The key id tokens carry in their header.
    public let kid: String
    public let publicKey: P256.Signing.PublicKey
    /// Present only for the active key, and only where the store may decrypt it.
    public let privateKey: P256.Signing.PrivateKey?
    /// Nil while the key signs new tokens.
    public let retiredAt: Date?
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

    static func sealingContext(kid: String) -> String { "signing_keys.private_key_ciphertext:\(kid)" }

    /// Every key that still verifies: the active one and retired ones not yet past `verify_until`.
    /// - Parameter decryptActive: whether to open the active key's private part (only auth signs).
    public func usableKeys(decryptActive: Bool) async throws -> [SigningKey] {
        let rows = try await database.client.query(
            """
            SELECT kid, public_key, private_key_ciphertext, retired_at FROM signing_keys
            WHERE retired_at IS NULL OR verify_until > now() ORDER BY created_at
            """, logger: logger)
        var keys: [SigningKey] = []
        for try await (kid, publicKey, sealed, retiredAt) in rows.decode((String, Data, Data, Date?).self) {
            var privateKey: P256.Signing.PrivateKey?
            if decryptActive, retiredAt == nil {
                let raw = try encryption.open(sealed, context: Self.sealingContext(kid: kid))
                privateKey = try P256.Signing.PrivateKey(rawRepresentation: raw)
            }
            keys.append(
                SigningKey(kid: kid, publicKey: try P256.Signing.PublicKey(x963Representation: publicKey), privateKey: privateKey, retiredAt: retiredAt))
        }
        return keys
    }

    /// Creates the first key when there is no active one (several instances may race; one wins).
    public func ensureActiveKey() async throws {
        try await database.client.withTransaction(logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(Self.advisoryLockID))", logger: logger)
            let active = try await connection.query("SELECT 1 FROM signing_keys WHERE retired_at IS NULL", logger: logger)
            for try await _ in active { return }
            let kid = try await insertKey(on: connection)
            logger.info("created the first token signing key", metadata: ["kid": "\(kid)"])
        }
    }

    /// Retires the active key (it keeps verifying for `verifyRetiredFor`) and creates a new one; tells
    /// every verifier through the outbox.
    @discardableResult
    public func rotate(verifyRetiredFor: Duration) async throws -> String {
        try await database.client.withTransaction(logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(Self.advisoryLockID))", logger: logger)
            let seconds = verifyRetiredFor.wholeSeconds
            try await connection.query(
                """
                UPDATE signing_keys SET retired_at = now(), verify_until = now() + make_interval(secs => \(seconds))
                WHERE retired_at IS NULL
                """, logger: logger)
            let kid = try await insertKey(on: connection)
            try await Outbox.append(
                EventEnvelope(appID: nil, event: .signingKeyRotated(SigningKeyRotated(kid: kid))), on: connection, logger: logger)
            logger.info("rotated the token signing key", metadata: ["kid": "\(kid)"])
            return kid
        }
    }

    private func insertKey(on connection: PostgresConnection) async throws -> String {
        let privateKey = P256.Signing.PrivateKey()
        let kid = Base64.urlEncode((0..<12).map { _ in UInt8.random(in: 0...255) })
        let sealed = Data(try encryption.seal(privateKey.rawRepresentation, context: Self.sealingContext(kid: kid)))
        let publicKey = Data(privateKey.publicKey.x963Representation)
        try await connection.query(
            """
            INSERT INTO signing_keys (kid, algorithm, public_key, private_key_ciphertext)
            VALUES (\(kid), 'ES256', \(publicKey), \(sealed))
            """, logger: logger)
        return kid
    }
}

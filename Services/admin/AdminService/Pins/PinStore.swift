import Crypto
import Foundation
import Logging
import PostgresNIO
import SesameDomain
import SesameEncryption
import SesameJSON
import SesamePinning
import SesameStorage
import CryptoExtras

/// A pin as the management API lists it.
typealias PinListing = Components.Schemas.Pin

/// An app's pins and its registry signing key. Every change is audited and announced, so every
/// delivery instance signs and serves the new registry.
struct PinStore: Sendable {
    let database: Database
    let encryption: EnvelopeEncryption
    let logger: Logger

    /// Adds (or replaces) `pin`; makes the app's signing key first when it has none.
    func add(appID: String, domainName: String, key: String, fqdn: String?, expire: Int64?, caller: Caller) async throws {
        if try await publicKey(appID: appID, state: .active) == nil { try await rotate(appID: appID, bits: 2048, caller: caller) }
        try await database.client.withTransaction(logger: logger) { connection in
            try await connection.query(
                """
                INSERT INTO pins (app_id, domain_name, spki_sha256, fqdn, expire) VALUES (\(appID), \(domainName), \(key), \(fqdn), \(expire))
                ON CONFLICT (app_id, domain_name, spki_sha256) DO UPDATE SET fqdn = EXCLUDED.fqdn, expire = EXCLUDED.expire, created_at = now()
                """, logger: logger)
            try await AuditLog.append(
                AuditEntry(actor: caller.auditName, action: .pinAdd, details: ["domainName": .string(domainName), "key": .string(key)]),
                appID: appID, on: connection, logger: logger)
        }
    }

    /// Removes the pin; false when there was none.
    func remove(appID: String, domainName: String, key: String, caller: Caller) async throws -> Bool {
        try await database.client.withTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                "DELETE FROM pins WHERE app_id = \(appID) AND domain_name = \(domainName) AND spki_sha256 = \(key) RETURNING 1", logger: logger)
            var removed = false
            for try await _ in rows { removed = true }
            guard removed else { return false }
            try await AuditLog.append(
                AuditEntry(actor: caller.auditName, action: .pinRemove, details: ["domainName": .string(domainName), "key": .string(key)]),
                appID: appID, on: connection, logger: logger)
            return true
        }
    }

    func list(appID: String) async throws -> [PinListing] {
        let rows = try await database.client.query(
            "SELECT domain_name, spki_sha256, fqdn, expire, created_at FROM pins WHERE app_id = \(appID) ORDER BY domain_name, created_at",
            logger: logger)
        var pins: [PinListing] = []
        for try await (domain, key, fqdn, expire, date) in rows.decode((String, String, String?, Int64?, Date).self) {
            pins.append(PinListing(domainName: domain, key: key, fqdn: fqdn, expire: expire, date: date))
        }
        return pins
    }

    /// Where a signing key stands (`pin_signing_keys.state`).
    enum KeyState: String, Sendable {
        /// Made ahead of a rotation: apps can ship its public key before it signs.
        case pending
        /// Signs the registry.
        case active
    }

    /// A signing key's public part.
    struct SigningKey: Sendable {
        let keyID: UUID
        let key: _RSA.Signing.PublicKey
        let createdAt: Date
    }

    /// The app's `active` signing key (it signs the registry) or `pending` one (made ahead of a
    /// rotation); nil when there is none.
    func publicKey(appID: String, state: KeyState) async throws -> SigningKey? {
        let rows = try await database.client.query(
            "SELECT key_id, public_key_der, created_at FROM pin_signing_keys WHERE app_id = \(appID) AND state = \(state.rawValue)", logger: logger)
        for try await (keyID, der, createdAt) in rows.decode((UUID, Data, Date).self) {
            return SigningKey(keyID: keyID, key: try _RSA.Signing.PublicKey(derRepresentation: der), createdAt: createdAt)
        }
        return nil
    }

    /// Makes the key the next rotation will switch to (replacing an earlier pending one), without
    /// signing anything with it yet: apps can ship its public key first.
    func prepare(appID: String, bits: Int, caller: Caller) async throws -> SigningKey {
        let (keyID, privateKey, sealed) = try await newKey(appID: appID, bits: bits)
        try await database.client.withTransaction(logger: logger) { connection in
            try await lockSigningKeys(of: appID, on: connection)
            try await connection.query("DELETE FROM pin_signing_keys WHERE app_id = \(appID) AND state = 'pending'", logger: logger)
            try await connection.query(
                """
                INSERT INTO pin_signing_keys (key_id, app_id, public_key_der, private_key_ciphertext, state)
                VALUES (\(keyID), \(appID), \(privateKey.publicKey.derRepresentation), \(sealed), 'pending')
                """, logger: logger)
            try await AuditLog.append(
                AuditEntry(
                    actor: caller.auditName, action: .pinPrepareSigningKey,
                    details: ["keyId": .string(keyID.uuidString.lowercased()), "bits": .integer(Int64(bits))]),
                appID: appID, on: connection, logger: logger)
        }
        return SigningKey(keyID: keyID, key: privateKey.publicKey, createdAt: Date())
    }

    /// The registry is signed from the next load on with the pending key, or, without one, a new
    /// key of `bits`. The active key is retired (kept for the record until the next rotation);
    /// keys retired before are deleted, private parts and all.
    ///
    /// Which key becomes active is read in the rotation's own transaction, after locking the app's
    /// keys, so a `prepare` racing it cannot swap the key apps were told to ship.
    func rotate(appID: String, bits: Int, caller: Caller) async throws {
        for _ in 0..<3 {
            // A new key takes seconds to make: made before the transaction, used only if no key is pending then.
            let fresh = try await publicKey(appID: appID, state: .pending) == nil ? try await newKey(appID: appID, bits: bits) : nil
            if try await rotate(appID: appID, fresh: fresh, caller: caller) { return }
        }
        throw StorageError.unavailable
    }

    /// One try of `rotate`; false when the pending key went away after `fresh` was judged unneeded.
    private func rotate(appID: String, fresh: (keyID: UUID, privateKey: _RSA.Signing.PrivateKey, sealed: Data)?, caller: Caller) async throws
        -> Bool
    {
        try await database.client.withTransaction(logger: logger) { connection in
            try await lockSigningKeys(of: appID, on: connection)
            var pending: UUID?
            for try await keyID in try await connection.query(
                "SELECT key_id FROM pin_signing_keys WHERE app_id = \(appID) AND state = 'pending'", logger: logger
            ).decode(UUID.self) { pending = keyID }
            guard pending != nil || fresh != nil else { return false }
            try await connection.query("DELETE FROM pin_signing_keys WHERE app_id = \(appID) AND state = 'retired'", logger: logger)
            try await connection.query(
                "UPDATE pin_signing_keys SET state = 'retired', retired_at = now() WHERE app_id = \(appID) AND state = 'active'", logger: logger)
            let activated: UUID
            if let pending {
                activated = pending
                try await connection.query(
                    "UPDATE pin_signing_keys SET state = 'active', activated_at = now() WHERE key_id = \(pending)", logger: logger)
            } else if let fresh {
                activated = fresh.keyID
                try await connection.query(
                    """
                    INSERT INTO pin_signing_keys (key_id, app_id, public_key_der, private_key_ciphertext, state, activated_at)
                    VALUES (\(fresh.keyID), \(appID), \(fresh.privateKey.publicKey.derRepresentation), \(fresh.sealed), 'active', now())
                    """, logger: logger)
            } else {
                return false
            }
            try await AuditLog.append(
                AuditEntry(
                    actor: caller.auditName, action: .pinRotateSigningKey,
                    details: ["keyId": .string(activated.uuidString.lowercased()), "prepared": .bool(pending != nil)]),
                appID: appID, on: connection, logger: logger)
            return true
        }
    }

    /// Serializes every change to the app's signing keys (prepare, rotate) on the app's row.
    private func lockSigningKeys(of appID: String, on connection: PostgresConnection) async throws {
        try await connection.query("SELECT 1 FROM apps WHERE app_id = \(appID) FOR UPDATE", logger: logger)
    }

    /// A new RSA key of `bits`, its private part sealed for `appID`.
    private func newKey(appID: String, bits: Int) async throws -> (keyID: UUID, privateKey: _RSA.Signing.PrivateKey, sealed: Data) {
        let privateKey = try await PinSigningKeys.generate(bits: bits)
        let keyID = UUID()
        let sealed = Data(try encryption.seal(Array(privateKey.derRepresentation), context: SealingContext.pinSigningKey(appID: appID, keyID: keyID)))
        return (keyID, privateKey, sealed)
    }
}

import Crypto
import Foundation
import Logging
import PostgresNIO
import SesameEncryption
import SesameStorage

/// Named random keys that never change (`service_keys`), sealed under the master key: the first
/// instance to ask creates one, every instance then uses the same, and master key rotation
/// re-wraps them like any other secret.
actor ServiceKeyStore {
    private let database: Database
    private let encryption: EnvelopeEncryption
    private let logger: Logger
    private var loaded: [String: SymmetricKey] = [:]

    init(database: Database, encryption: EnvelopeEncryption, logger: Logger) {
        self.database = database
        self.encryption = encryption
        self.logger = logger
    }


    func key(named name: String) async throws -> SymmetricKey {
        if let key = loaded[name] { return key }
        let candidate = SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }
        let sealed = Data(try encryption.seal(candidate, context: SealingContext.serviceKey(name: name)))
        // Racing instances: one insert wins, everyone reads the winner.
        try await database.client.query(
            "INSERT INTO service_keys (name, key_ciphertext) VALUES (\(name), \(sealed)) ON CONFLICT (name) DO NOTHING", logger: logger)
        let rows = try await database.client.query("SELECT key_ciphertext FROM service_keys WHERE name = \(name)", logger: logger)
        for try await stored in rows.decode(Data.self) {
            let key = SymmetricKey(data: try encryption.open(stored, context: SealingContext.serviceKey(name: name)))
            loaded[name] = key
            return key
        }
        throw StorageError.unavailable
    }
}

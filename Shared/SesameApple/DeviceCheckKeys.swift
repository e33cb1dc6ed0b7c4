import Foundation
import Logging
import PostgresNIO
import SesameEncryption
import SesameStorage

/// Each app's DeviceCheck key as admin stored it (sealed under the master key, bound to the app),
/// opened to sign a call to Apple. Admin writes it; admin and auth read it here.
public struct DeviceCheckKeys: Sendable {
    let database: Database
    let encryption: EnvelopeEncryption
    let logger: Logger

    public init(database: Database, encryption: EnvelopeEncryption, logger: Logger) {
        self.database = database
        self.encryption = encryption
        self.logger = logger
    }

    /// The key of `appID`, to sign with; nil when none is set.
    public func key(appID: String) async throws -> DeviceCheckKey? {
        let rows = try await database.client.query(
            """
            SELECT c.key_id, a.team_id, c.private_key_ciphertext FROM apple_credentials c JOIN apps a USING (app_id)
            WHERE c.app_id = \(appID)
            """, logger: logger)
        for try await (keyID, teamID, sealed) in rows.decode((String, String, Data).self) {
            let pem = String(decoding: try encryption.open(sealed, context: SealingContext.appleCredentials(appID: appID)), as: UTF8.self)
            return try DeviceCheckKey(keyID: keyID, teamID: teamID, privateKeyPEM: pem)
        }
        return nil
    }

    /// `token` (an install's DeviceCheck token) sealed for `attested_keys.device_token_ciphertext`.
    public func sealDeviceToken(_ token: String, appID: String, keyID: String) throws -> Data {
        Data(try encryption.seal(Array(token.utf8), context: SealingContext.deviceToken(appID: appID, keyID: keyID)))
    }

    /// The token `sealDeviceToken` sealed.
    public func openDeviceToken(_ sealed: Data, appID: String, keyID: String) throws -> String {
        String(decoding: try encryption.open(sealed, context: SealingContext.deviceToken(appID: appID, keyID: keyID)), as: UTF8.self)
    }
}

import Foundation

/// An attested App Attest key, as stored.
public struct AttestedKey: Sendable {
    public let keyID: [UInt8]
    public let appID: String
    public let publicKey: [UInt8]
    public let counter: UInt32
    public let environment: String
    public let revoked: Bool

    public init(keyID: [UInt8], appID: String, publicKey: [UInt8], counter: UInt32, environment: String, revoked: Bool) {
        self.keyID = keyID
        self.appID = appID
        self.publicKey = publicKey
        self.counter = counter
        self.environment = environment
        self.revoked = revoked
    }
}

extension AttestedKey {
    /// A key's columns as the statements that read one select them, after its id: `app_id`,
    /// `public_key`, `counter`, `environment`, whether it is revoked.
    public typealias StoredColumns = (String, Data, Int64, String, Bool)

    public init(keyID: [UInt8], stored: StoredColumns) {
        let (appID, publicKey, counter, environment, revoked) = stored
        self.init(
            keyID: keyID, appID: appID, publicKey: Array(publicKey), counter: UInt32(clamping: counter), environment: environment,
            revoked: revoked)
    }
}

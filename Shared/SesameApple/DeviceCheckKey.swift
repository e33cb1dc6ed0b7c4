import Crypto
import Foundation
import JWTKit

/// A team's DeviceCheck key: the `.p8` private key Apple lets a developer download once, its 10-character
/// key id and the team's id. It signs the short-lived JWT each call to Apple's DeviceCheck and App Attest
/// servers carries (`alg` ES256, `kid` the key id, `iss` the team id, `iat` now).
public struct DeviceCheckKey: Sendable {
    /// Why a key was not accepted, in a sentence that names the field.
    public struct Invalid: Error, Equatable, CustomStringConvertible {
        public let field: String
        public let reason: String
        public var description: String { "\(field) \(reason)" }
    }

    public let keyID: String
    public let teamID: String
    let privateKey: P256.Signing.PrivateKey

    /// Apple's key ids and team ids: ten upper-case letters or digits.
    static func isAppleIdentifier(_ text: String) -> Bool {
        text.count == 10 && text.unicodeScalars.allSatisfy { ("A"..."Z").contains($0) || ("0"..."9").contains($0) }
    }

    /// The key from the `.p8` file's text (PKCS#8 PEM of a P-256 key, as Apple hands it out).
    public init(keyID: String, teamID: String, privateKeyPEM: String) throws(Invalid) {
        guard Self.isAppleIdentifier(keyID) else { throw Invalid(field: "keyId", reason: "must be the key's 10-character id from Apple (upper-case letters and digits)") }
        guard Self.isAppleIdentifier(teamID) else { throw Invalid(field: "teamId", reason: "must be the team's 10-character id from Apple") }
        guard privateKeyPEM.utf8.count <= 4096, let key = try? P256.Signing.PrivateKey(pemRepresentation: privateKeyPEM) else {
            throw Invalid(field: "privateKey", reason: "must be the .p8 file's text: a PEM P-256 private key (BEGIN PRIVATE KEY)")
        }
        self.keyID = keyID
        self.teamID = teamID
        privateKey = key
    }

    /// The key as stored (sealed): its PEM.
    public var privateKeyPEM: String { privateKey.pemRepresentation }

    /// The JWT to send as `Authorization: Bearer …`, issued at `now`. Apple accepts it for an hour.
    public func developerToken(at now: Date = Date()) async throws -> String {
        let keys = await JWTKeyCollection().add(ecdsa: try ES256PrivateKey(backing: privateKey), kid: JWKIdentifier(string: keyID))
        return try await keys.sign(DeveloperClaims(iss: IssuerClaim(value: teamID), iat: IssuedAtClaim(value: now)), kid: JWKIdentifier(string: keyID))
    }

    /// The claims Apple reads: who (the team) and when.
    struct DeveloperClaims: JWTPayload {
        let iss: IssuerClaim
        let iat: IssuedAtClaim
        func verify(using algorithm: some JWTAlgorithm) throws {}
    }
}

import Crypto
import Foundation
import SesameKit

/// An `AppAttestProvider` in software: keys in memory, attestations signed by a
/// `SoftwareAttestationAuthority`, in exactly the format Apple's `DCAppAttestService` produces. A
/// development server that trusts the authority's root accepts it; a production server never does.
/// For tests, the Simulator, CI and `sesame-device`.
public final class SoftwareAppAttest: AppAttestProvider, Sendable {
    /// App Attest's two environments, told apart by the AAGUID in each attestation.
    public enum Environment: Sendable {
        case development, production

        var aaguid: [UInt8] {
            switch self {
            case .development: Array("appattestdevelop".utf8)
            case .production: Array("appattest".utf8) + [UInt8](repeating: 0, count: 7)
            }
        }
    }

    /// A key as held: its raw bytes, since CryptoKit's key types are not `Sendable` in every SDK
    /// SesameKit builds with (macOS 14's, for one).
    private struct Key: Sendable {
        let rawKey: Data
        var counter: UInt32 = 0

        func privateKey() throws -> P256.Signing.PrivateKey { try P256.Signing.PrivateKey(rawRepresentation: rawKey) }
    }

    /// `TEAMID.bundle.id`.
    public let appID: String
    /// The authority whose intermediate certifies each key.
    public let authority: SoftwareAttestationAuthority
    /// Which App Attest environment the attestations claim.
    public let environment: Environment
    private let keys = Locked<[String: Key]>([:])
    /// Where this device's DeviceCheck tokens come from (a fake Apple's, in tests); none by default.
    private let deviceCheckTokens: (@Sendable () -> Data?)?

    /// A device for `appID` (`TEAMID.bundle.id`) whose keys `authority` certifies; `deviceCheckTokens`
    /// makes the DeviceCheck token each attest sends.
    public init(
        appID: String, authority: SoftwareAttestationAuthority, environment: Environment = .development,
        deviceCheckTokens: (@Sendable () -> Data?)? = nil
    ) {
        self.appID = appID
        self.authority = authority
        self.environment = environment
        self.deviceCheckTokens = deviceCheckTokens
    }

    public func deviceCheckToken() async -> Data? { deviceCheckTokens?() }

    public var isSupported: Bool { true }

    public func generateKey() async throws -> String {
        let privateKey = P256.Signing.PrivateKey()
        let keyID = Data(SHA256.hash(data: privateKey.publicKey.x963Representation)).base64EncodedString()
        keys.withLock { $0[keyID] = Key(rawKey: privateKey.rawRepresentation) }
        return keyID
    }

    public func attestKey(_ keyID: String, clientDataHash: Data) async throws -> Data {
        guard let key = keys.withLock({ $0[keyID] }), let credentialID = Data(base64Encoded: keyID) else {
            throw AppAttestProviderError.invalidKey
        }
        let privateKey = try key.privateKey()
        let publicKey = privateKey.publicKey.x963Representation
        let coseKey = CBORWriter.Value.map([
            (.unsigned(1), .unsigned(2)),  // kty: EC2
            (.unsigned(3), .negative(6)),  // alg: ES256 (-7)
            (.negative(0), .unsigned(1)),  // crv: P-256
            (.negative(1), .bytes(Array(publicKey.dropFirst().prefix(32)))),
            (.negative(2), .bytes(Array(publicKey.suffix(32)))),
        ])
        var authenticatorData = rpIDHash + [0x40] + [0, 0, 0, 0] + environment.aaguid
        authenticatorData += [UInt8(credentialID.count >> 8), UInt8(credentialID.count & 0xff)] + Array(credentialID)
        authenticatorData += CBORWriter.encode(coseKey)
        let nonce = Array(SHA256.hash(data: authenticatorData + Array(clientDataHash)))
        let chain = try authority.certificateChain(certifying: privateKey.publicKey, nonce: nonce)
        return Data(
            CBORWriter.encode(
                .map([
                    (.text("fmt"), .text("apple-appattest")),
                    (
                        .text("attStmt"),
                        .map([
                            (.text("x5c"), .array(chain.map { .bytes($0) })),
                            (.text("receipt"), .bytes(Array("software-app-attest-receipt".utf8))),
                        ])
                    ),
                    (.text("authData"), .bytes(authenticatorData)),
                ])))
    }

    public func generateAssertion(_ keyID: String, clientDataHash: Data) async throws -> Data {
        guard let key = keys.withLock({ keys -> Key? in
            guard var key = keys[keyID] else { return nil }
            key.counter += 1
            keys[keyID] = key
            return key
        }) else { throw AppAttestProviderError.invalidKey }
        let (privateKey, counter) = (try key.privateKey(), key.counter)
        let authenticatorData = rpIDHash + [0x00] + [UInt8(counter >> 24), UInt8(counter >> 16 & 0xff), UInt8(counter >> 8 & 0xff), UInt8(counter & 0xff)]
        let nonce = Array(SHA256.hash(data: authenticatorData + Array(clientDataHash)))
        let signature = try privateKey.signature(for: nonce)
        return Data(
            CBORWriter.encode(
                .map([
                    (.text("signature"), .bytes(Array(signature.derRepresentation))),
                    (.text("authenticatorData"), .bytes(authenticatorData)),
                ])))
    }

    private var rpIDHash: [UInt8] { Array(SHA256.hash(data: Array(appID.utf8))) }
}

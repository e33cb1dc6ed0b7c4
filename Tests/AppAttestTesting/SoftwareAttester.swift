import AppAttest
import CBOR
import Crypto
import Foundation
import SesameKitTesting
import SwiftASN1
import X509

/// Stands in for an iPhone's Secure Enclave and Apple's attestation service: a test root CA, an
/// intermediate and per-key leaves made with swift-certificates, producing attestation objects and
/// assertions laid out exactly as a device's. Trust `rootCertificate` to verify what it makes.
public struct SoftwareAttester: Sendable {
    /// The CA: SesameKitTesting's, so the server's tests, the walk and SesameKit attest alike.
    public let authority: SoftwareAttestationAuthority
    /// The test root, to pass as an additional root to `AppAttestVerifier`.
    public var rootCertificate: Certificate { authority.rootCertificate }
    /// The intermediate that signs every leaf this attester makes.
    public var intermediateCertificate: Certificate { authority.intermediateCertificate }

    /// A key the "device" generated: its id (SHA256 of the public key) and private key.
    public struct DeviceKey: Sendable {
        /// The private key (only the device has it).
        public let privateKey: P256.Signing.PrivateKey
        /// SHA256 of the public key's X9.63 representation, as `generateKey` returns it.
        public var keyId: [UInt8] { Array(SHA256.hash(data: privateKey.publicKey.x963Representation)) }
        /// The public key.
        public var publicKey: P256.Signing.PublicKey { privateKey.publicKey }
    }

    /// Everything that goes into one attestation; tests change one field to break one step.
    public struct Recipe: Sendable {
        public var fmt = "apple-appattest"
        public var rpIdHash: [UInt8]
        public var counter: UInt32 = 0
        public var aaguid: [UInt8]
        public var credentialId: [UInt8]
        /// The bytes hashed with the authenticator data into the certified nonce (normally the clientDataHash).
        public var nonceClientDataHash: [UInt8]
        /// The key certified in the leaf (normally the device key).
        public var certifiedKey: P256.Signing.PublicKey
        /// Whether to include the intermediate in x5c.
        public var includeIntermediate = true
        /// The DER sent as the intermediate instead of the authority's (which signed the leaf).
        public var substituteIntermediate: [UInt8]? = nil
        /// Extra bytes after the credential public key, as newer iOS versions append.
        public var trailingAuthenticatorData: [UInt8] = []
        /// The app the attestation's receipt names (set by `recipe(for:…)`).
        public var receiptAppID: String? = nil
    }

    /// Creates a CA whose certificates are valid from an hour before to a day after `now`; each
    /// attestation carries a receipt of `receipts` (a placeholder without one).
    public init(now: Date = Date(), receipts: SoftwareReceiptAuthority? = nil) throws {
        authority = SoftwareAttestationAuthority(now: now)
        self.receipts = receipts
    }

    /// Signs the receipt in each attestation.
    public let receipts: SoftwareReceiptAuthority?

    /// A new device key, as `DCAppAttestService.generateKey` makes one.
    public func generateKey() -> DeviceKey {
        DeviceKey(privateKey: P256.Signing.PrivateKey())
    }

    /// The recipe of a correct attestation of `key` over `clientDataHash` for `appId`.
    public func recipe(
        for key: DeviceKey, clientDataHash: [UInt8], appId: String, environment: AppAttestEnvironment = .development
    ) -> Recipe {
        Recipe(
            rpIdHash: Array(SHA256.hash(data: Array(appId.utf8))), aaguid: environment.aaguid, credentialId: key.keyId,
            nonceClientDataHash: clientDataHash, certifiedKey: key.publicKey, receiptAppID: appId
        )
    }

    /// A correct attestation object, as `attestKey` returns it.
    public func attest(
        _ key: DeviceKey, clientDataHash: [UInt8], appId: String, environment: AppAttestEnvironment = .development
    ) throws -> [UInt8] {
        try attestation(from: recipe(for: key, clientDataHash: clientDataHash, appId: appId, environment: environment))
    }

    /// The attestation object `recipe` describes.
    public func attestation(from recipe: Recipe) throws -> [UInt8] {
        let coseKey = CBORValue.map([
            .init(key: .unsigned(1), value: .unsigned(2)),  // kty: EC2
            .init(key: .unsigned(3), value: .negative(6)),  // alg: ES256 (-7)
            .init(key: .negative(0), value: .unsigned(1)),  // crv: P-256
            .init(key: .negative(1), value: .bytes(Array(recipe.certifiedKey.x963Representation.dropFirst().prefix(32)))),
            .init(key: .negative(2), value: .bytes(Array(recipe.certifiedKey.x963Representation.suffix(32)))),
        ])
        var authenticatorData = recipe.rpIdHash + [0x40] + Self.bigEndian(recipe.counter) + recipe.aaguid
        authenticatorData += [UInt8(recipe.credentialId.count >> 8), UInt8(recipe.credentialId.count & 0xff)] + recipe.credentialId
        authenticatorData += CBOREncoder.encode(coseKey) + recipe.trailingAuthenticatorData

        let nonce = Array(SHA256.hash(data: authenticatorData + recipe.nonceClientDataHash))
        var certificates = try authority.certificateChain(certifying: recipe.certifiedKey, nonce: nonce)
        if let substitute = recipe.substituteIntermediate { certificates[1] = substitute }
        let chain: [CBORValue] = (recipe.includeIntermediate ? certificates : [certificates[0]]).map { .bytes($0) }
        return CBOREncoder.encode(
            .map([
                .init(key: .text("fmt"), value: .text(recipe.fmt)),
                .init(
                    key: .text("attStmt"),
                    value: .map([
                        .init(key: .text("x5c"), value: .array(chain)),
                        .init(key: .text("receipt"), value: .bytes(try receipt(for: recipe))),
                    ])),
                .init(key: .text("authData"), value: .bytes(authenticatorData)),
            ]))
    }

    /// The attestation's receipt: an `ATTEST` receipt of `receipts` when there is one, else a placeholder.
    func receipt(for recipe: Recipe) throws -> [UInt8] {
        guard let receipts, let appID = recipe.receiptAppID else { return Array("software-attester-receipt".utf8) }
        return try receipts.receipt(kind: "ATTEST", appID: appID, publicKey: recipe.certifiedKey)
    }

    /// An assertion, as `generateAssertion` returns it: signs SHA256(authenticatorData ‖ clientDataHash).
    public func assert(
        _ key: DeviceKey, clientDataHash: [UInt8], appId: String, counter: UInt32, signingKey: P256.Signing.PrivateKey? = nil
    ) throws -> [UInt8] {
        let authenticatorData = Array(SHA256.hash(data: Array(appId.utf8))) + [0x00] + Self.bigEndian(counter)
        let nonce = Array(SHA256.hash(data: authenticatorData + clientDataHash))
        let signature = try (signingKey ?? key.privateKey).signature(for: nonce)
        return CBOREncoder.encode(
            .map([
                .init(key: .text("signature"), value: .bytes(Array(signature.derRepresentation))),
                .init(key: .text("authenticatorData"), value: .bytes(authenticatorData)),
            ]))
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)]
    }

    /// The DER encoding of `certificate` (x5c entries, fingerprints).
    public static func der(_ certificate: Certificate) throws -> [UInt8] {
        try SoftwareAttestationAuthority.der(certificate)
    }
}

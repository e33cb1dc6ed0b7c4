import Crypto
import Foundation
import Synchronization
import SwiftASN1
@_spi(CMS) import X509

/// Stands in for Apple's App Attest receipt signer, for tests: a root (which a development server
/// trusts as an extra root, as it does the software attester's) and a signer certificate under it,
/// making receipts in the format Apple's "Assessing fraud risk" documents.
public final class SoftwareReceiptAuthority: Sendable {
    /// The root, as a server trusts it.
    public let rootCertificate: Certificate
    private let signerCertificate: Certificate
    private let signerRawKey: Data
    /// Whose each receipt made here is (by its bytes): the app and the key's X9.63 public key, so a
    /// fake Apple can answer a receipt with a newer one for the same key.
    private let issued = Mutex<[Data: (appID: String, publicKey: Data)]>([:])

    /// A new authority whose certificates are valid from an hour before `now` to a day after.
    public init(now: Date = Date()) {
        let rootKey = P256.Signing.PrivateKey()
        let signerKey = P256.Signing.PrivateKey()
        let validity = now.addingTimeInterval(-3600)...now.addingTimeInterval(86400)
        // Building these from fixed, valid parts cannot fail; a failure is a bug in this file.
        do {
            let rootName = try DistinguishedName { CommonName("Sesame Software Receipt Root CA") }
            rootCertificate = try Certificate(
                version: .v3, serialNumber: .init(), publicKey: .init(rootKey.publicKey),
                notValidBefore: validity.lowerBound, notValidAfter: validity.upperBound, issuer: rootName, subject: rootName,
                signatureAlgorithm: .ecdsaWithSHA256,
                extensions: try Certificate.Extensions {
                    Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                    Critical(KeyUsage(keyCertSign: true))
                },
                issuerPrivateKey: .init(rootKey))
            signerCertificate = try Certificate(
                version: .v3, serialNumber: .init(), publicKey: .init(signerKey.publicKey),
                notValidBefore: validity.lowerBound, notValidAfter: validity.upperBound, issuer: rootName,
                subject: try DistinguishedName { CommonName("Sesame Software App Attest Receipt Signing") },
                signatureAlgorithm: .ecdsaWithSHA256,
                extensions: try Certificate.Extensions { Critical(KeyUsage(digitalSignature: true)) },
                issuerPrivateKey: .init(rootKey))
        } catch {
            preconditionFailure("cannot build the software receipt authority: \(error)")
        }
        signerRawKey = signerKey.rawRepresentation
    }

    /// The root as PEM, for `SESAME_APP_ATTEST_EXTRA_ROOTS`.
    public var rootCertificatePEM: String {
        get throws { try rootCertificate.serializeAsPEM().pemString }
    }

    /// A receipt of `kind` (`ATTEST` or `RECEIPT`) for `appID`'s key `publicKey`, created at `createdAt`;
    /// `fields` replaces or adds fields by type (a test breaks one).
    public func receipt(
        kind: String, appID: String, publicKey: P256.Signing.PublicKey, riskMetric: Int? = nil, createdAt: Date = Date(),
        expiresAt: Date? = nil, fields overrides: [Int: [UInt8]] = [:]
    ) throws -> [UInt8] {
        let signerKey = try P256.Signing.PrivateKey(rawRepresentation: signerRawKey)
        // Field 3: the attested key's certificate, as Apple puts the credential certificate there.
        let keyCertificate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(publicKey), notValidBefore: createdAt.addingTimeInterval(-60),
            notValidAfter: createdAt.addingTimeInterval(86400), issuer: signerCertificate.subject,
            subject: try DistinguishedName { CommonName("attested key") }, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: Certificate.Extensions(), issuerPrivateKey: .init(signerKey))
        var serializer = DER.Serializer()
        try serializer.serialize(keyCertificate)
        let iso = ISO8601DateFormatter()
        iso.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        var fields: [Int: [UInt8]] = [
            2: Array(appID.utf8), 3: serializer.serializedBytes, 4: Array(repeating: 0, count: 32), 5: Array("software-token".utf8),
            6: Array(kind.utf8), 12: Array(iso.string(from: createdAt).utf8),
            21: Array(iso.string(from: expiresAt ?? createdAt.addingTimeInterval(90 * 86400)).utf8),
        ]
        if kind == "RECEIPT" {
            fields[17] = Array(String(riskMetric ?? 1).utf8)
            fields[19] = Array(iso.string(from: createdAt.addingTimeInterval(86400)).utf8)
        }
        fields.merge(overrides) { $1 }
        var payload = DER.Serializer()
        try payload.appendConstructedNode(identifier: .set) { set in
            for (type, value) in fields.sorted(by: { $0.key < $1.key }) {
                try set.appendConstructedNode(identifier: .sequence) { attribute in
                    try attribute.serialize(type)
                    try attribute.serialize(1)
                    try attribute.serialize(ASN1OctetString(contentBytes: value[...]))
                }
            }
        }
        let receipt = try CMS.sign(
            payload.serializedBytes, certificate: signerCertificate, privateKey: .init(signerKey), signingTime: createdAt, detached: false)
        issued.withLock { $0[Data(receipt)] = (appID, publicKey.x963Representation) }
        return receipt
    }

    /// The app and key (X9.63) of a receipt made here; nil for any other bytes.
    public func subject(of receipt: [UInt8]) -> (appID: String, publicKey: P256.Signing.PublicKey)? {
        guard let subject = issued.withLock({ $0[Data(receipt)] }), let key = try? P256.Signing.PublicKey(x963Representation: subject.publicKey)
        else { return nil }
        return (subject.appID, key)
    }
}

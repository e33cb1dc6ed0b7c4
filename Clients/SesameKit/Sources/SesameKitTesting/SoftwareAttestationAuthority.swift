import Crypto
import Foundation
import SwiftASN1
import X509

/// A certificate authority that stands in for Apple's App Attest CA, for tests and development
/// servers: a fresh root and intermediate, in memory. Give `rootCertificatePEM` to a development
/// server's `SESAME_APP_ATTEST_EXTRA_ROOTS` and it accepts `SoftwareAppAttest`'s attestations.
public final class SoftwareAttestationAuthority: Sendable {
    /// The root, as a server trusts it.
    public let rootCertificate: Certificate
    /// The intermediate that signs each key's certificate.
    public let intermediateCertificate: Certificate
    /// The intermediate's private key, as raw bytes: CryptoKit's key types are not `Sendable` in
    /// every SDK SesameKit builds with (macOS 14's, for one).
    private let intermediateRawKey: Data
    private var intermediateKey: P256.Signing.PrivateKey {
        get throws { try P256.Signing.PrivateKey(rawRepresentation: intermediateRawKey) }
    }
    private let validity: ClosedRange<Date>

    /// A new authority whose certificates are valid from an hour before `now` for `lifetime`
    /// seconds after it (a day by default; a tool that keeps its authority may want a year).
    public init(now: Date = Date(), lifetime: TimeInterval = 86400) {
        let rootKey = P256.Signing.PrivateKey()
        let intermediateKey = P256.Signing.PrivateKey()
        // Whole seconds, as certificates hold them: a saved authority reloads with the same validity.
        let now = Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down))
        let validity = now.addingTimeInterval(-3600)...now.addingTimeInterval(lifetime.rounded(.down))
        // Building these from fixed, valid parts cannot fail; a failure is a bug in this file.
        do {
            let rootName = try DistinguishedName { CommonName("SesameKit Software App Attestation Root CA") }
            let intermediateName = try DistinguishedName { CommonName("SesameKit Software App Attestation CA 1") }
            rootCertificate = try Certificate(
                version: .v3, serialNumber: .init(), publicKey: .init(rootKey.publicKey),
                notValidBefore: validity.lowerBound, notValidAfter: validity.upperBound,
                issuer: rootName, subject: rootName, signatureAlgorithm: .ecdsaWithSHA256,
                extensions: try Certificate.Extensions {
                    Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                    Critical(KeyUsage(keyCertSign: true))
                },
                issuerPrivateKey: .init(rootKey))
            intermediateCertificate = try Certificate(
                version: .v3, serialNumber: .init(), publicKey: .init(intermediateKey.publicKey),
                notValidBefore: validity.lowerBound, notValidAfter: validity.upperBound,
                issuer: rootName, subject: intermediateName, signatureAlgorithm: .ecdsaWithSHA256,
                extensions: try Certificate.Extensions {
                    Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                    Critical(KeyUsage(keyCertSign: true))
                },
                issuerPrivateKey: .init(rootKey))
        } catch {
            preconditionFailure("cannot build the software attestation CA: \(error)")
        }
        self.intermediateRawKey = intermediateKey.rawRepresentation
        self.validity = validity
    }

    /// The authority as PEM — its two certificates and the key that signs key certificates — to be
    /// loaded again with `init(pemBundle:)`. Guard it as the CA it is: whoever holds it can attest
    /// to any server that trusts its root.
    public var pemBundle: String {
        get throws {
            [try rootCertificate.serializeAsPEM().pemString, try intermediateCertificate.serializeAsPEM().pemString, try intermediateKey.pemRepresentation]
                .joined(separator: "\n")
        }
    }

    /// The authority saved as `pemBundle`.
    public init(pemBundle: String) throws {
        let documents = try PEMDocument.parseMultiple(pemString: pemBundle)
        let certificates = try documents.filter { $0.discriminator == "CERTIFICATE" }.map { try Certificate(pemDocument: $0) }
        guard certificates.count == 2, let key = documents.first(where: { $0.discriminator.hasSuffix("PRIVATE KEY") }) else {
            throw BundleError(description: "a software attestation authority is two certificates and a private key in PEM")
        }
        rootCertificate = certificates[0]
        intermediateCertificate = certificates[1]
        intermediateRawKey = try P256.Signing.PrivateKey(pemRepresentation: key.pemString).rawRepresentation
        validity = intermediateCertificate.notValidBefore...intermediateCertificate.notValidAfter
    }

    /// Why a PEM bundle is not an authority.
    public struct BundleError: Error, CustomStringConvertible {
        /// What is wrong with the bundle.
        public let description: String
    }

    /// When its certificates stop being valid.
    public var expiresAt: Date { validity.upperBound }

    /// The root certificate as PEM.
    public var rootCertificatePEM: String {
        (try? rootCertificate.serializeAsPEM().pemString) ?? ""
    }

    /// The OID of Apple's nonce extension in a key's certificate.
    static let nonceExtensionOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 8, 2]

    /// The `x5c` of an attestation: a certificate for `publicKey` carrying `nonce` in Apple's
    /// extension, then the intermediate's, in DER.
    public func certificateChain(certifying publicKey: P256.Signing.PublicKey, nonce: [UInt8]) throws -> [[UInt8]] {
        // SEQUENCE { [1] EXPLICIT OCTET STRING (32) }, as Apple encodes it.
        let nonceExtension: [UInt8] = [0x30, 0x24, 0xA1, 0x22, 0x04, 0x20] + nonce
        let name = try DistinguishedName {
            CommonName(SHA256.hash(data: publicKey.x963Representation).map { String(format: "%02x", $0) }.joined())
        }
        let leaf = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(publicKey),
            notValidBefore: validity.lowerBound, notValidAfter: validity.upperBound,
            issuer: intermediateCertificate.subject, subject: name, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                Certificate.Extension(oid: Self.nonceExtensionOID, critical: false, value: nonceExtension[...])
            },
            issuerPrivateKey: .init(try intermediateKey))
        return [try Self.der(leaf), try Self.der(intermediateCertificate)]
    }

    /// The DER encoding of `certificate`.
    public static func der(_ certificate: Certificate) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return serializer.serializedBytes
    }
}

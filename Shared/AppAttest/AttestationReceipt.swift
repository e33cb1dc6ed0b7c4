import Crypto
import Foundation
import SwiftASN1
@_spi(CMS) @_spi(FixedExpiryValidationTime) import X509

/// An App Attest receipt, verified: the one in each attestation (`ATTEST`), or one Apple's server gave
/// for it (`RECEIPT`, with the risk metric). Apple's "Assessing fraud risk" describes it: a PKCS #7
/// signed-data whose signer chains to Apple Root CA - G3, around a set of
/// `SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }` fields.
public struct AttestationReceipt: Sendable, Equatable {
    /// Field 6.
    public enum Kind: String, Sendable {
        /// The receipt in an attestation: no risk metric yet.
        case attest = "ATTEST"
        /// A receipt Apple's server gave in exchange for an earlier one.
        case receipt = "RECEIPT"
    }

    /// The receipt's own bytes (the PKCS #7 container), to keep and to send to Apple next time.
    public let bytes: [UInt8]
    public let kind: Kind
    /// Field 2: `TEAMID.bundle.id`.
    public let appID: String
    /// Field 12.
    public let createdAt: Date
    /// Field 17, `RECEIPT` only: approximately how many App Attest keys the device made for the app.
    public let riskMetric: Int?
    /// Field 19, `RECEIPT` only: before this, Apple answers a new request with the same receipt.
    public let notBefore: Date?
    /// Field 21.
    public let expiresAt: Date
}

/// Why a receipt was refused: the step of Apple's verification that failed.
public struct AttestationReceiptError: Error, Equatable, CustomStringConvertible {
    public enum Step: String, Sendable {
        /// Not PKCS #7 signed-data with content, or the signature does not verify.
        case signature
        /// The signer does not chain to a trusted root at the time of the check.
        case chain
        /// The fields do not parse, or a required one is missing.
        case payload
        /// Field 2 is another app's.
        case appID = "app_id"
        /// Field 3 certifies another key than the attested one.
        case publicKey = "public_key"
        /// Created too long ago, or in the future.
        case freshness
    }

    public let step: Step
    public let reason: String
    public var description: String { "the receipt was refused at step '\(step.rawValue)': \(reason)" }
}

/// Verifies App Attest receipts as Apple's "Assessing fraud risk" lists the steps.
public struct AttestationReceiptVerifier: Sendable {
    /// The largest receipt read (Apple's are about 5 KiB).
    public static let maximumBytes = 64 * 1024
    /// How far a receipt's creation time may be ahead of this server's clock.
    public static let clockSkew: TimeInterval = 300

    private let roots: [Certificate]

    /// Trusts Apple Root CA - G3 and `additionalRoots` (a development setting, for test chains).
    public init(additionalRoots: [Certificate] = []) {
        roots = [AppleRootCAG3.certificate] + additionalRoots
    }

    /// `bytes` verified as a receipt of `appID` for the key whose public key is `publicKey` (X9.63),
    /// at `now`; with `maxAge`, it must also have been created within that many seconds (Apple: five
    /// minutes, for a receipt just received from its server).
    public func verify(
        _ bytes: [UInt8], appID: String, publicKey: [UInt8], at now: Date = Date(), maxAge: TimeInterval? = nil
    ) async throws(AttestationReceiptError) -> AttestationReceipt {
        guard bytes.count <= Self.maximumBytes else { throw .init(step: .payload, reason: "larger than \(Self.maximumBytes) bytes") }
        let container: [UInt8]
        do {
            container = try CMSBERNormalization.normalized(bytes)
        } catch {
            throw .init(step: .signature, reason: "not BER (\(error))")
        }
        let validation = await CMS.isValidAttachedSignature(signatureBytes: container, trustRoots: CertificateStore(roots)) {
            RFC5280Policy(fixedExpiryValidationTime: now)
        }
        switch validation {
        case .success: break
        case .failure(.unableToValidateSigner(let failure)):
            throw .init(step: .chain, reason: "the signer does not chain to a trusted root (\(failure.policyFailures.count) failures)")
        case .failure(let failure):
            throw .init(step: .signature, reason: "\(failure)")
        }
        let fields: [Int: [UInt8]]
        do {
            fields = try Self.fields(try Self.content(of: container))
        } catch let error as AttestationReceiptError {
            throw error
        } catch {
            throw .init(step: .payload, reason: "the fields do not parse (\(error))")
        }
        let receipt = try Self.receipt(bytes: bytes, fields: fields)

        guard receipt.appID == appID else { throw .init(step: .appID, reason: "it is \(receipt.appID)'s") }
        guard let certificateDER = fields[3], let certificate = try? Certificate(derEncoded: certificateDER),
            let key = P256.Signing.PublicKey(certificate.publicKey), key.x963Representation == Data(publicKey)
        else { throw .init(step: .publicKey, reason: "field 3 does not certify the attested key") }
        guard receipt.createdAt <= now.addingTimeInterval(Self.clockSkew) else {
            throw .init(step: .freshness, reason: "created in the future (\(receipt.createdAt))")
        }
        if let maxAge, now.timeIntervalSince(receipt.createdAt) > maxAge {
            throw .init(step: .freshness, reason: "created \(Int(now.timeIntervalSince(receipt.createdAt))) s ago, more than \(Int(maxAge))")
        }
        return receipt
    }

    /// The signed content of a PKCS #7 signed-data (`ContentInfo { signedData [0] { version,
    /// digestAlgorithms, encapContentInfo { type, [0] OCTET STRING }, … } }`), read as BER as Apple
    /// writes it. swift-certificates verifies the signature over the same bytes, but keeps its parsed
    /// form internal.
    static func content(of bytes: [UInt8]) throws -> [UInt8] {
        try BER.sequence(try BER.parse(bytes), identifier: .sequence) { nodes in
            _ = try ASN1ObjectIdentifier(berEncoded: &nodes)
            return try BER.explicitlyTagged(&nodes, tagNumber: 0, tagClass: .contextSpecific) { signedData in
                try BER.sequence(signedData, identifier: .sequence) { fields in
                    _ = try Int(berEncoded: &fields)
                    _ = fields.next()  // digestAlgorithms
                    guard let encapsulated = fields.next() else { throw AttestationReceiptError(step: .payload, reason: "no content") }
                    let content = try BER.sequence(encapsulated, identifier: .sequence) { parts in
                        _ = try ASN1ObjectIdentifier(berEncoded: &parts)
                        return try BER.explicitlyTagged(&parts, tagNumber: 0, tagClass: .contextSpecific) { try ASN1OctetString(berEncoded: $0) }
                    }
                    while fields.next() != nil {}  // certificates, signerInfos: verified by swift-certificates
                    return Array(content.bytes)
                }
            }
        }
    }

    /// The payload's fields by type (the last of a type wins; Apple sends each once).
    static func fields(_ payload: [UInt8]) throws -> [Int: [UInt8]] {
        let attributes = try BER.set(of: ReceiptAttribute.self, identifier: .set, rootNode: try BER.parse(payload))
        return Dictionary(attributes.map { ($0.type, Array($0.value.bytes)) }) { _, last in last }
    }

    /// The typed receipt from its fields, or `payload` naming the one missing or malformed.
    static func receipt(bytes: [UInt8], fields: [Int: [UInt8]]) throws(AttestationReceiptError) -> AttestationReceipt {
        func text(_ type: Int) -> String? { fields[type].map { String(decoding: $0, as: UTF8.self) }.flatMap { $0.isEmpty ? nil : $0 } }
        func date(_ type: Int) -> Date? { text(type).flatMap(Self.date) }
        guard let appID = text(2) else { throw .init(step: .payload, reason: "no app id (field 2)") }
        guard let kind = text(6).flatMap(AttestationReceipt.Kind.init(rawValue:)) else { throw .init(step: .payload, reason: "no receipt type (field 6)") }
        guard let createdAt = date(12) else { throw .init(step: .payload, reason: "no creation time (field 12)") }
        guard let expiresAt = date(21) else { throw .init(step: .payload, reason: "no expiration time (field 21)") }
        var riskMetric: Int?
        if let metric = text(17) {
            guard let value = Int(metric), value >= 0 else { throw .init(step: .payload, reason: "a risk metric that is not a count (field 17)") }
            riskMetric = value
        }
        return AttestationReceipt(
            bytes: bytes, kind: kind, appID: appID, createdAt: createdAt, riskMetric: riskMetric, notBefore: date(19), expiresAt: expiresAt)
    }

    /// An ISO 8601 time, with or without fractional seconds, as Apple writes them.
    static func date(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }
}

/// `SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }`, read as BER.
struct ReceiptAttribute: BERImplicitlyTaggable {
    static var defaultIdentifier: ASN1Identifier { .sequence }

    let type: Int
    let version: Int
    let value: ASN1OctetString

    init(type: Int, version: Int, value: ASN1OctetString) {
        self.type = type
        self.version = version
        self.value = value
    }

    init(derEncoded rootNode: ASN1Node, withIdentifier identifier: ASN1Identifier) throws {
        self = try .init(berEncoded: rootNode, withIdentifier: identifier)
    }

    init(berEncoded rootNode: ASN1Node, withIdentifier identifier: ASN1Identifier) throws {
        self = try BER.sequence(rootNode, identifier: identifier) { nodes in
            let type = try Int(berEncoded: &nodes)
            let version = try Int(berEncoded: &nodes)
            let value = try ASN1OctetString(berEncoded: &nodes)
            return ReceiptAttribute(type: type, version: version, value: value)
        }
    }

    func serialize(into coder: inout DER.Serializer, withIdentifier identifier: ASN1Identifier) throws {
        try coder.appendConstructedNode(identifier: identifier) { coder in
            try coder.serialize(type)
            try coder.serialize(version)
            try coder.serialize(value)
        }
    }
}

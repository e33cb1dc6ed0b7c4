import Foundation

/// The SubjectPublicKeyInfo of an X.509 certificate, read straight from its DER: what an SPKI pin
/// hashes. Only the few DER steps this needs, so a pinned session needs no ASN.1 library.
public enum CertificateSPKI {
    /// The certificate is not the DER this reads.
    public struct Malformed: Error, Equatable {}

    /// The DER bytes of the `subjectPublicKeyInfo` of `certificate` (DER).
    public static func extract(fromCertificateDER certificate: Data) throws(Malformed) -> Data {
        let bytes = [UInt8](certificate)
        // Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm, signatureValue }
        let outer = try element(in: bytes, at: 0, tag: 0x30)
        // TBSCertificate ::= SEQUENCE { [0] version OPTIONAL, serialNumber, signature, issuer,
        //                               validity, subject, subjectPublicKeyInfo, … }
        let tbs = try element(in: bytes, at: outer.contentStart, tag: 0x30)
        var position = tbs.contentStart
        if position < tbs.end, bytes[position] == 0xA0 { position = try element(in: bytes, at: position, tag: 0xA0).end }
        for tag: UInt8 in [0x02, 0x30, 0x30, 0x30, 0x30] {  // serialNumber, signature, issuer, validity, subject
            position = try element(in: bytes, at: position, tag: tag).end
        }
        let spki = try element(in: bytes, at: position, tag: 0x30)
        guard spki.end <= tbs.end else { throw Malformed() }
        return Data(bytes[position..<spki.end])
    }

    /// A DER element with `tag` at `offset`: where its content starts and where it ends.
    private static func element(in bytes: [UInt8], at offset: Int, tag: UInt8) throws(Malformed) -> (contentStart: Int, end: Int) {
        guard offset + 2 <= bytes.count, bytes[offset] == tag else { throw Malformed() }
        let first = Int(bytes[offset + 1])
        var length = first
        var contentStart = offset + 2
        if first & 0x80 != 0 {
            let count = first & 0x7F
            guard (1...4).contains(count), contentStart + count <= bytes.count else { throw Malformed() }
            length = bytes[contentStart..<contentStart + count].reduce(0) { $0 << 8 | Int($1) }
            contentStart += count
        }
        guard contentStart + length <= bytes.count else { throw Malformed() }
        return (contentStart, contentStart + length)
    }
}

import SwiftASN1

/// Stands in for two defects of swift-certificates 1.21.1's CMS reading BER (with swift-asn1 1.7.4),
/// which Apple's App Attest receipts meet, so that no real receipt verifies: an OCTET STRING in
/// constructed form, which BER allows and the receipts use for their signed content, is refused
/// ("ASN1OctetString encoded with constructed encoding"); and the certificates' SET OF is read with
/// DER's rule that its elements be sorted, which the receipts' (signer first) are not; and a SHA-2
/// digest algorithm written with NULL parameters (as the receipts write it, and RFC 5754 says readers
/// must accept) is not matched to the signature algorithm's ("Digest and signature algorithm
/// mismatch"). This rewrites
/// the BER container with every constructed OCTET STRING primitive (its segments joined), every length
/// definite, and the elements of each context-specific `[0]` set of SEQUENCEs (the certificates; the
/// signed attributes, which DER already sorts) in DER order, and SHA-2 digest algorithms without their
/// NULL. No signed byte changes: a CMS signature
/// covers the content's octets and the DER of the signed attributes, not the container's encoding.
///
/// The defect as it would be filed, its reproduction and when to delete this:
/// `docs/upstream/swift-certificates-cms-ber-receipts.md`; its canary is in `AttestationReceiptTests`.
enum CMSBERNormalization {
    /// `bytes` (BER) re-encoded with each constructed OCTET STRING primitive.
    static func normalized(_ bytes: [UInt8]) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try append(try BER.parse(bytes), to: &serializer)
        return serializer.serializedBytes
    }

    private static func append(_ node: ASN1Node, to coder: inout DER.Serializer) throws {
        switch node.content {
        case .primitive(let bytes):
            coder.appendPrimitiveNode(identifier: node.identifier) { $0.append(contentsOf: bytes) }
        case .constructed(let children) where node.identifier == .octetString:
            var joined: [UInt8] = []
            try collect(children, into: &joined)
            coder.appendPrimitiveNode(identifier: .octetString) { $0.append(contentsOf: joined) }
        case .constructed(let children) where node.identifier == .sequence && Self.isSHA2WithNull(Array(children)):
            // `AlgorithmIdentifier { sha-2 OID, NULL }` as `{ sha-2 OID }`.
            try coder.appendConstructedNode(identifier: .sequence) { inner in try append(Array(children)[0], to: &inner) }
        case .constructed(let children) where node.identifier == Self.contextZero && Array(children).count > 1
            && children.allSatisfy({ $0.identifier == .sequence }):
            // A SET OF in DER order: each element's encoding, sorted as octet strings.
            let elements = try children.map { child in
                var element = DER.Serializer()
                try append(child, to: &element)
                return element.serializedBytes
            }.sorted { $0.lexicographicallyPrecedes($1) }
            coder.appendConstructedNode(identifier: node.identifier) { inner in
                for element in elements { inner.serializeRawBytes(element) }
            }
        case .constructed(let children):
            try coder.appendConstructedNode(identifier: node.identifier) { inner in
                for child in children { try append(child, to: &inner) }
            }
        }
    }

    private static let contextZero = ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)

    /// The content of the OIDs of the SHA-2 family, 2.16.840.1.101.3.4.2.x, but for the last arc.
    private static let sha2Arcs: [UInt8] = [0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02]

    /// Whether `children` are a SHA-2 OID followed by NULL.
    private static func isSHA2WithNull(_ children: [ASN1Node]) -> Bool {
        guard children.count == 2, children[0].identifier == .objectIdentifier, children[1].identifier == .null,
            case .primitive(let oid) = children[0].content, case .primitive(let null) = children[1].content, null.isEmpty
        else { return false }
        return oid.count == sha2Arcs.count + 1 && oid.starts(with: sha2Arcs)
    }

    /// The octets of a constructed OCTET STRING's segments, which may nest.
    private static func collect(_ segments: ASN1NodeCollection, into joined: inout [UInt8]) throws {
        for segment in segments {
            guard segment.identifier == .octetString else {
                throw ASN1Error.invalidASN1Object(reason: "a constructed OCTET STRING holds only OCTET STRING segments")
            }
            switch segment.content {
            case .primitive(let bytes): joined.append(contentsOf: bytes)
            case .constructed(let inner): try collect(inner, into: &joined)
            }
        }
    }
}

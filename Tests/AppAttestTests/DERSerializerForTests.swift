import SwiftASN1
import X509

/// DER bytes of a certificate, for fingerprints.
struct DERSerializerForTests {
    mutating func der(_ certificate: Certificate) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return serializer.serializedBytes
    }
}

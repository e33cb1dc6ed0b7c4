import CBOR
import SwiftASN1
import X509

/// The parts of an attestation object, decoded but not yet trusted.
struct ParsedAttestation {
    let leaf: Certificate
    let intermediates: [Certificate]
    let receipt: [UInt8]
    let authenticatorDataBytes: [UInt8]
    let authenticatorData: AuthenticatorData

    /// The largest attestation object accepted (real ones are about 5–6 KiB).
    static let maximumSize = 64 * 1024

    init(_ bytes: [UInt8]) throws(AppAttestError) {
        guard bytes.count <= Self.maximumSize else { throw AppAttestError(.format, "the attestation object is too large") }
        let object: CBORValue
        do {
            object = try CBORDecoder().decode(bytes)
        } catch {
            throw AppAttestError(.format, "the attestation object is not valid CBOR (\(error))")
        }
        guard object["fmt"]?.textString == "apple-appattest" else {
            throw AppAttestError(.format, "the format is not apple-appattest")
        }
        guard let statement = object["attStmt"],
            let chain = statement["x5c"]?.arrayElements,
            let receipt = statement["receipt"]?.byteString,
            let authenticatorDataBytes = object["authData"]?.byteString
        else {
            throw AppAttestError(.format, "the attestation object lacks attStmt.x5c, attStmt.receipt or authData")
        }
        // Apple always sends exactly [credCert, intermediate]; more is an attempt to make chain
        // building search (see BudgetedCertificateStore), fewer cannot reach the root.
        guard chain.count == 2 else {
            throw AppAttestError(.format, "attStmt.x5c must hold exactly two certificates (leaf and intermediate), not \(chain.count)")
        }
        var certificates: [Certificate] = []
        for element in chain {
            guard let der = element.byteString, let certificate = try? Certificate(derEncoded: der) else {
                throw AppAttestError(.format, "x5c holds something that is not a DER certificate")
            }
            certificates.append(certificate)
        }
        self.leaf = certificates[0]
        self.intermediates = Array(certificates.dropFirst())
        self.receipt = receipt
        self.authenticatorDataBytes = authenticatorDataBytes
        self.authenticatorData = try AuthenticatorData(authenticatorDataBytes, requireAttestedCredential: true)
    }
}

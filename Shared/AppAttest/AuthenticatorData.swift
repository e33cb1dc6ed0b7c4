import CBOR

/// The authenticator data of an attestation or assertion (WebAuthn layout).
///
/// Attestations carry attested credential data after the fixed 37 bytes; newer iOS versions append
/// further fields (bundle version, validation category) after the credential public key, which
/// are accepted and ignored.
public struct AuthenticatorData: Sendable, Equatable {
    /// SHA256 of the App ID.
    public let rpIdHash: [UInt8]
    /// The flags byte.
    public let flags: UInt8
    /// The signature counter.
    public let counter: UInt32
    /// The AAGUID (attestations only).
    public let aaguid: [UInt8]?
    /// The credential id (attestations only).
    public let credentialId: [UInt8]?
    /// The credential public key as a COSE map (attestations only).
    public let credentialPublicKey: CBORValue?

    /// Parses `bytes`; `requireAttestedCredential` for attestations.
    public init(_ bytes: [UInt8], requireAttestedCredential: Bool) throws(AppAttestError) {
        guard bytes.count >= 37 else { throw AppAttestError(.format, "authenticator data is shorter than 37 bytes") }
        rpIdHash = Array(bytes[0..<32])
        flags = bytes[32]
        counter = bytes[33..<37].reduce(0) { $0 << 8 | UInt32($1) }
        guard requireAttestedCredential else {
            aaguid = nil
            credentialId = nil
            credentialPublicKey = nil
            return
        }
        // The AT flag (bit 6) says attested credential data follows.
        guard flags & 0x40 != 0 else { throw AppAttestError(.format, "authenticator data carries no attested credential") }
        guard bytes.count >= 55 else { throw AppAttestError(.format, "authenticator data ends inside the attested credential") }
        aaguid = Array(bytes[37..<53])
        let idLength = Int(bytes[53]) << 8 | Int(bytes[54])
        guard bytes.count >= 55 + idLength else { throw AppAttestError(.format, "credential id runs past the authenticator data") }
        credentialId = Array(bytes[55..<55 + idLength])
        do {
            let (key, _) = try CBORDecoder(maxDepth: 4).decodePrefix(bytes[(55 + idLength)...])
            credentialPublicKey = key
        } catch {
            throw AppAttestError(.format, "credential public key is not valid CBOR (\(error))")
        }
    }
}

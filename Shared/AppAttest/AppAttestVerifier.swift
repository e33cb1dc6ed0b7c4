import CBOR
import Crypto
import Foundation
import SwiftASN1
@_spi(FixedExpiryValidationTime) import X509

/// Verifies App Attest attestations and assertions exactly as Apple's "Validating apps that
/// connect to your server" describes. Pure: no I/O, and the verification time is a parameter.
public struct AppAttestVerifier: Sendable {
    /// What a valid attestation establishes; store all of it with the key.
    public struct Attestation: Sendable, Equatable {
        /// The attested key's public key, 65-byte X9.63 uncompressed point.
        public let publicKey: [UInt8]
        /// Apple's receipt, for later fraud-metric requests.
        public let receipt: [UInt8]
        /// Development or production.
        public let environment: AppAttestEnvironment
        /// The sign counter (always 0 for an attestation).
        public let counter: UInt32
    }

    /// The OID of the leaf extension holding the nonce.
    public static let nonceExtensionOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 8, 2]

    /// The roots a chain may end in: Apple's, plus any added for development and tests.
    public let trustedRoots: [Certificate]
    /// Intermediates already verified against `trustedRoots` (shared by copies of this verifier).
    let verifiedIntermediates = VerifiedIntermediates()

    /// Creates a verifier trusting Apple's root and `additionalRoots`.
    ///
    /// Extra roots let a software attester stand in for a device in development and tests; a
    /// production deployment must pass none (the services refuse to start otherwise).
    public init(additionalRoots: [Certificate] = []) {
        self.trustedRoots = [AppleAppAttestRoot.certificate] + additionalRoots
    }

    // MARK: Attestation

    /// Verifies an attestation object from `attestKey`, for the key `keyId`, over `clientDataHash`
    /// (the exact bytes the app passed), for `appId` (`TEAMID.bundle.id`), at time `time`.
    ///
    /// - Parameter environment: the environment required, or nil to accept either and report which.
    public func verifyAttestation(
        _ attestationObject: [UInt8],
        keyId: [UInt8],
        clientDataHash: [UInt8],
        appId: String,
        environment requiredEnvironment: AppAttestEnvironment? = nil,
        at time: Date
    ) async throws(AppAttestError) -> Attestation {
        let parsed = try ParsedAttestation(attestationObject)

        // 1. The chain: leaf and intermediate from x5c, to a trusted root, valid at `time`.
        try await verifyChain(leaf: parsed.leaf, intermediates: parsed.intermediates, at: time)

        // 2–4. nonce = SHA256(authData ‖ clientDataHash) equals the leaf's nonce extension.
        let nonce = Array(SHA256.hash(data: parsed.authenticatorDataBytes + clientDataHash))
        guard let certifiedNonce = try Self.certifiedNonce(in: parsed.leaf) else {
            throw AppAttestError(.nonce, "the leaf certificate has no App Attest nonce extension")
        }
        guard certifiedNonce == nonce else {
            throw AppAttestError(.nonce, "the certified nonce does not match SHA256(authenticatorData ‖ clientDataHash)")
        }

        // 5. keyId = SHA256 of the leaf's public key.
        guard let leafKey = P256.Signing.PublicKey(parsed.leaf.publicKey) else {
            throw AppAttestError(.keyId, "the leaf certificate's key is not a P-256 key")
        }
        let publicKey = Array(leafKey.x963Representation)
        guard Array(SHA256.hash(data: publicKey)) == keyId else {
            throw AppAttestError(.keyId, "the key id is not SHA256 of the certified public key")
        }

        // 6. RP ID hash = SHA256(App ID).
        let authenticatorData = parsed.authenticatorData
        guard authenticatorData.rpIdHash == Array(SHA256.hash(data: Array(appId.utf8))) else {
            throw AppAttestError(.rpIdHash, "the attestation was made for another App ID")
        }

        // 7. Counter 0.
        guard authenticatorData.counter == 0 else {
            throw AppAttestError(.counter, "an attestation's counter must be 0, got \(authenticatorData.counter)")
        }

        // 8. AAGUID: development or production (and the one required, if any).
        guard let aaguid = authenticatorData.aaguid, let environment = AppAttestEnvironment(aaguid: aaguid[...]) else {
            throw AppAttestError(.aaguid, "the AAGUID is neither appattestdevelop nor appattest")
        }
        if let requiredEnvironment, requiredEnvironment != environment {
            throw AppAttestError(.aaguid, "a \(environment.rawValue) key where \(requiredEnvironment.rawValue) is required")
        }

        // 9. Credential id = key id.
        guard authenticatorData.credentialId == keyId else {
            throw AppAttestError(.credentialId, "the credential id is not the key id")
        }

        return Attestation(publicKey: publicKey, receipt: parsed.receipt, environment: environment, counter: authenticatorData.counter)
    }

    /// Issuer look-ups one chain search may make: a real chain needs one or two; the cap bounds the
    /// work whatever `intermediates` holds.
    static let chainLookupBudget = 8

    func verifyChain(leaf: Certificate, intermediates: [Certificate], at time: Date) async throws(AppAttestError) {
        // An intermediate verified against its root before, that root valid now: the leaf checked
        // against the intermediate as the anchor is the rest of the full check (its signature, and
        // both certificates valid at `time`). Anything else takes the full check.
        if intermediates.count == 1, verifiedIntermediates.vouchesFor(intermediates[0], at: time) {
            var verifier = Verifier(rootCertificates: CertificateStore(intermediates)) {
                RFC5280Policy(fixedExpiryValidationTime: time)
            }
            if case .validCertificate = await verifier.validate(leaf: leaf, intermediates: CertificateStore()) { return }
        }
        var verifier = Verifier(rootCertificates: CertificateStore(trustedRoots)) {
            RFC5280Policy(fixedExpiryValidationTime: time)
        }
        let store = BudgetedCertificateStore(intermediates, lookups: Self.chainLookupBudget)
        let result = await verifier.validate(leaf: leaf, intermediates: CertificateStore(custom: store))
        guard case .validCertificate(let chain) = result else {
            if store.isExhausted { throw AppAttestError(.chain, "the certificate chain search exceeded its budget") }
            throw AppAttestError(.chain, "the certificate chain does not lead to a trusted App Attest root at \(time)")
        }
        verifiedIntermediates.remember(chain)
    }

    /// The nonce in the leaf's extension: SEQUENCE { [1] EXPLICIT OCTET STRING }.
    static func certifiedNonce(in leaf: Certificate) throws(AppAttestError) -> [UInt8]? {
        guard let nonceExtension = leaf.extensions[oid: nonceExtensionOID] else { return nil }
        do {
            let root = try DER.parse(nonceExtension.value)
            return try DER.sequence(root, identifier: .sequence) { nodes in
                try DER.explicitlyTagged(&nodes, tagNumber: 1, tagClass: .contextSpecific) { node in
                    Array(try ASN1OctetString(derEncoded: node).bytes)
                }
            }
        } catch {
            throw AppAttestError(.nonce, "the nonce extension is malformed")
        }
    }

    // MARK: Assertion

    /// Verifies an assertion from `generateAssertion` over `clientDataHash` (SHA256 of the client
    /// data the app signed), with the key's stored `publicKey` and `previousCounter`.
    ///
    /// - Returns: the new counter, to store (atomically, only if still greater than the stored one).
    public func verifyAssertion(
        _ assertionObject: [UInt8],
        clientDataHash: [UInt8],
        publicKey: P256.Signing.PublicKey,
        appId: String,
        previousCounter: UInt32
    ) throws(AppAttestError) -> UInt32 {
        let decoded: CBORValue
        do {
            decoded = try CBORDecoder(maxDepth: 4).decode(assertionObject)
        } catch {
            throw AppAttestError(.format, "the assertion is not valid CBOR (\(error))")
        }
        guard let signatureBytes = decoded["signature"]?.byteString,
            let authenticatorDataBytes = decoded["authenticatorData"]?.byteString
        else {
            throw AppAttestError(.format, "the assertion lacks signature or authenticatorData")
        }
        let authenticatorData = try AuthenticatorData(authenticatorDataBytes, requireAttestedCredential: false)

        // 1–3. nonce = SHA256(authenticatorData ‖ clientDataHash); the signature is ECDSA-SHA256 over it.
        let nonce = Array(SHA256.hash(data: authenticatorDataBytes + clientDataHash))
        guard let signature = try? P256.Signing.ECDSASignature(derRepresentation: signatureBytes),
            publicKey.isValidSignature(signature, for: nonce)
        else {
            throw AppAttestError(.signature, "the signature does not verify under the attested key")
        }

        // 4. RP ID hash.
        guard authenticatorData.rpIdHash == Array(SHA256.hash(data: Array(appId.utf8))) else {
            throw AppAttestError(.rpIdHash, "the assertion was made for another App ID")
        }

        // 5. Counter strictly increasing.
        guard authenticatorData.counter > previousCounter else {
            throw AppAttestError(.counter, "counter \(authenticatorData.counter) is not greater than \(previousCounter): replayed assertion")
        }
        return authenticatorData.counter
    }
}

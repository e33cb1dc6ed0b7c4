import AppAttest
import CBOR
import Crypto
import Foundation
import SesameDomain

/// The dashboard as a WebAuthn relying party: verifies passkey registrations (`none` attestation,
/// ES256) and sign-ins for one RP ID and its origins, as WebAuthn Level 2 §7.1 and §7.2 ask: the
/// client data's type, challenge and origin; the RP ID hash; user presence and verification; the
/// key; the signature; the sign counter.
public struct WebAuthnRelyingParty: Sendable {
    /// The RP ID: the dashboard's host name (`localhost`, `sesame.example.com`).
    public let id: String
    /// The origins the dashboard is served from (`https://sesame.example.com`).
    public let origins: Set<String>

    public init(id: String, origins: Set<String>) {
        self.id = id
        self.origins = origins
    }

    /// A credential a registration created.
    public struct Credential: Sendable, Equatable {
        public let id: [UInt8]
        /// The P-256 public key, X9.63.
        public let publicKey: [UInt8]
        public let signCount: UInt32
    }

    /// Verifies `navigator.credentials.create()`'s response against the `challenge` this server
    /// issued for it.
    public func verifyRegistration(
        attestationObject: [UInt8], clientDataJSON: [UInt8], challenge: [UInt8]
    ) throws(WebAuthnError) -> Credential {
        try checkClientData(clientDataJSON, type: "webauthn.create", challenge: challenge)
        let object: CBORValue
        do {
            object = try CBORDecoder(maxDepth: 8).decode(attestationObject)
        } catch {
            throw WebAuthnError(.format, "the attestation object is not CBOR (\(error))")
        }
        guard let format = object["fmt"]?.textString, let authDataBytes = object["authData"]?.byteString else {
            throw WebAuthnError(.format, "the attestation object lacks fmt or authData")
        }
        // Passkeys sync between devices: their attestation says nothing worth trusting, so none is asked for.
        guard format == "none" else { throw WebAuthnError(.attestationFormat, "format '\(format)' where 'none' was asked for") }
        let authData = try authenticatorData(authDataBytes, withCredential: true)
        guard let credentialID = authData.credentialId, !credentialID.isEmpty, credentialID.count <= 1023 else {
            throw WebAuthnError(.format, "the credential id is missing or longer than 1023 bytes")
        }
        let key = try Self.es256Key(authData.credentialPublicKey)
        return Credential(id: credentialID, publicKey: Array(key.x963Representation), signCount: authData.counter)
    }

    /// Verifies `navigator.credentials.get()`'s response by the credential with `publicKey`, last
    /// seen at `storedSignCount`, against the `challenge` this server issued; returns the new sign
    /// count to store.
    public func verifyAssertion(
        authenticatorData authDataBytes: [UInt8], clientDataJSON: [UInt8], signature: [UInt8], challenge: [UInt8], publicKey: [UInt8],
        storedSignCount: UInt32
    ) throws(WebAuthnError) -> UInt32 {
        try checkClientData(clientDataJSON, type: "webauthn.get", challenge: challenge)
        let authData = try authenticatorData(authDataBytes, withCredential: false)
        guard let key = try? P256.Signing.PublicKey(x963Representation: publicKey) else {
            throw WebAuthnError(.publicKey, "the stored public key is not a P-256 point")
        }
        guard let ecdsa = try? P256.Signing.ECDSASignature(derRepresentation: signature),
            key.isValidSignature(ecdsa, for: authDataBytes + Array(SHA256.hash(data: clientDataJSON)))
        else { throw WebAuthnError(.signature, "the signature does not verify with the passkey's public key") }
        // Authenticators that keep no counter send 0 every time; any other must count up.
        if authData.counter != 0 || storedSignCount != 0, authData.counter <= storedSignCount {
            throw WebAuthnError(.signCount, "the sign counter went from \(storedSignCount) to \(authData.counter): the authenticator may be cloned")
        }
        return authData.counter
    }

    // MARK: Steps both ceremonies share

    private func checkClientData(_ json: [UInt8], type: String, challenge: [UInt8]) throws(WebAuthnError) {
        struct ClientData: Decodable {
            let type: String
            let challenge: String
            let origin: String
            let crossOrigin: Bool?
        }
        guard json.count <= 4096, let clientData = try? JSONDecoder().decode(ClientData.self, from: Data(json)) else {
            throw WebAuthnError(.format, "clientDataJSON is not the expected JSON object")
        }
        guard clientData.type == type else { throw WebAuthnError(.type, "type '\(clientData.type)' where '\(type)' was expected") }
        guard let presented = Base64.decode(clientData.challenge), ConstantTime.equals(presented, challenge) else {
            throw WebAuthnError(.challenge, "the challenge is not the one issued")
        }
        guard origins.contains(clientData.origin), clientData.crossOrigin != true else {
            throw WebAuthnError(.origin, "origin '\(clientData.origin)' is not the dashboard's")
        }
    }

    private func authenticatorData(_ bytes: [UInt8], withCredential: Bool) throws(WebAuthnError) -> AuthenticatorData {
        let authData: AuthenticatorData
        do {
            authData = try AuthenticatorData(bytes, requireAttestedCredential: withCredential)
        } catch {
            throw WebAuthnError(.format, error.description)
        }
        guard authData.rpIdHash == Array(SHA256.hash(data: Array(id.utf8))) else {
            throw WebAuthnError(.rpIdHash, "the authenticator data was made for another RP ID than '\(id)'")
        }
        guard authData.flags & 0x01 != 0 else { throw WebAuthnError(.userPresence, "the user was not present") }
        guard authData.flags & 0x04 != 0 else { throw WebAuthnError(.userVerification, "the user was not verified") }
        return authData
    }

    /// The P-256 key of an ES256 COSE key: kty 2 (EC2), alg -7, crv 1, 32-byte x and y.
    static func es256Key(_ cose: CBORValue?) throws(WebAuthnError) -> P256.Signing.PublicKey {
        guard let cose, cose[integerKey: 1] == .unsigned(2), cose[integerKey: 3] == .negative(6), cose[integerKey: -1] == .unsigned(1),
            let x = cose[integerKey: -2]?.byteString, let y = cose[integerKey: -3]?.byteString, x.count == 32, y.count == 32, let key = try? P256.Signing.PublicKey(x963Representation: [0x04] + x + y)
        else { throw WebAuthnError(.publicKey, "the credential key is not an ES256 (P-256) COSE key") }
        return key
    }
}

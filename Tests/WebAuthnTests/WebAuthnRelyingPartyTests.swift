import Crypto
import Foundation
import SesameDomain
import Testing
import WebAuthn

/// The verifier against responses the Python `fido2` package built (`Vectors/make_vectors.py`):
/// the valid ones pass, and each check has a vector or a changed expectation that breaks it.
@Suite("WebAuthn relying party")
struct WebAuthnRelyingPartyTests {
    struct Vectors: Decodable {
        struct Registration: Decodable {
            let attestationObject: String
            let clientDataJSON: String
        }
        struct Assertion: Decodable {
            let authenticatorData: String
            let clientDataJSON: String
            let signature: String
        }
        let rpId: String
        let origin: String
        let credentialId: String
        let publicKeyX963: String
        let registerChallenge: String
        let loginChallenge: String
        let registration, registrationWithoutUserVerification, registrationPacked, registrationOtherOrigin, registrationOtherRP,
            registrationAsGet: Registration
        let assertion, assertionWithoutUserVerification, assertionWithoutUserPresence, assertionOtherOrigin, assertionAsCreate,
            assertionCounterZero: Assertion
    }

    static let vectors: Vectors = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Vectors/vectors.json")
        // The vectors are committed beside this file; a missing one is a broken checkout, not a skip.
        return try! JSONDecoder().decode(Vectors.self, from: Data(contentsOf: url))
    }()

    static func bytes(_ text: String) -> [UInt8] { Base64.decode(text)! }

    var party: WebAuthnRelyingParty { WebAuthnRelyingParty(id: Self.vectors.rpId, origins: [Self.vectors.origin]) }

    func register(_ registration: Vectors.Registration, challenge: String = vectors.registerChallenge, party: WebAuthnRelyingParty? = nil)
        throws(WebAuthnError) -> WebAuthnRelyingParty.Credential
    {
        try (party ?? self.party).verifyRegistration(
            attestationObject: Self.bytes(registration.attestationObject), clientDataJSON: Self.bytes(registration.clientDataJSON),
            challenge: Self.bytes(challenge))
    }

    func signIn(_ assertion: Vectors.Assertion, challenge: String = vectors.loginChallenge, stored: UInt32 = 0, publicKey: [UInt8]? = nil)
        throws(WebAuthnError) -> UInt32
    {
        try party.verifyAssertion(
            authenticatorData: Self.bytes(assertion.authenticatorData), clientDataJSON: Self.bytes(assertion.clientDataJSON),
            signature: Self.bytes(assertion.signature), challenge: Self.bytes(challenge),
            publicKey: publicKey ?? Self.bytes(Self.vectors.publicKeyX963), storedSignCount: stored)
    }

    /// The step that refused, nil when nothing did.
    func step(_ body: () throws -> Any) -> WebAuthnError.Step? {
        do {
            _ = try body()
            return nil
        } catch {
            return (error as? WebAuthnError)?.step
        }
    }

    @Test("a registration gives the credential id, the public key and the counter")
    func registration() throws {
        let credential = try register(Self.vectors.registration)
        #expect(credential.id == Self.bytes(Self.vectors.credentialId))
        #expect(credential.publicKey == Self.bytes(Self.vectors.publicKeyX963))
        #expect(credential.signCount == 0)
    }

    @Test("each registration check refuses what breaks it")
    func registrationRefusals() {
        let v = Self.vectors
        #expect(step { try register(v.registration, challenge: v.loginChallenge) } == .challenge)
        #expect(step { try register(v.registrationAsGet) } == .type)
        #expect(step { try register(v.registrationOtherOrigin) } == .origin)
        #expect(step { try register(v.registrationOtherRP) } == .rpIdHash)
        #expect(step { try register(v.registrationWithoutUserVerification) } == .userVerification)
        #expect(step { try register(v.registrationPacked) } == .attestationFormat)
        #expect(step { try register(v.registration, party: WebAuthnRelyingParty(id: "example.com", origins: [v.origin])) } == .rpIdHash)
        #expect(step { try register(v.registration, party: WebAuthnRelyingParty(id: v.rpId, origins: ["https://localhost"])) } == .origin)
        let truncated = Vectors.Registration(
            attestationObject: Base64.urlEncode(Self.bytes(v.registration.attestationObject).dropLast(40)),
            clientDataJSON: v.registration.clientDataJSON)
        #expect(step { try register(truncated) } == .format)
    }

    @Test("a sign-in verifies the signature and moves the counter forward")
    func assertion() throws {
        #expect(try signIn(Self.vectors.assertion) == 7)
        #expect(try signIn(Self.vectors.assertion, stored: 6) == 7)
        // An authenticator without a counter sends 0 each time, and is accepted as such.
        #expect(try signIn(Self.vectors.assertionCounterZero) == 0)
    }

    @Test("each sign-in check refuses what breaks it")
    func assertionRefusals() {
        let v = Self.vectors
        #expect(step { try signIn(v.assertion, challenge: v.registerChallenge) } == .challenge)
        #expect(step { try signIn(v.assertionAsCreate) } == .type)
        #expect(step { try signIn(v.assertionOtherOrigin) } == .origin)
        #expect(step { try signIn(v.assertionWithoutUserVerification) } == .userVerification)
        #expect(step { try signIn(v.assertionWithoutUserPresence) } == .userPresence)
        #expect(step { try signIn(v.assertion, stored: 7) } == .signCount)
        #expect(step { try signIn(v.assertionCounterZero, stored: 3) } == .signCount)
        let otherKey = Array(P256.Signing.PrivateKey().publicKey.x963Representation)
        #expect(step { try signIn(v.assertion, publicKey: otherKey) } == .signature)
        var forged = Self.bytes(v.assertion.signature)
        forged[forged.count - 1] ^= 1
        let tampered = Vectors.Assertion(authenticatorData: v.assertion.authenticatorData, clientDataJSON: v.assertion.clientDataJSON, signature: Base64.urlEncode(forged))
        #expect(step { try signIn(tampered) } == .signature)
        #expect(step { try signIn(v.assertion, publicKey: [1, 2, 3]) } == .publicKey)
    }
}

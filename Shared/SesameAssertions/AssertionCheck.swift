import AppAttest
import Crypto
import Foundation

/// The check of an App Attest assertion by a stored key, which auth's refresh and the backend's
/// `POST /v1/verify/assertion`, and delivery's relays that ask for an assertion, share: the key exists for the app and is not revoked, the assertion
/// verifies (signature over the client data's hash, RP id, a counter above the stored one), and the
/// counter advances in one conditional update, so of two racing requests carrying the same
/// assertion only one passes.
public struct AssertionCheck: Sendable {
    let keys: AssertionKeys
    let verifier: AppAttestVerifier

    public init(keys: AssertionKeys, verifier: AppAttestVerifier) {
        self.keys = keys
        self.verifier = verifier
    }

    /// Why an assertion was refused.
    public enum Refusal: Error, Equatable {
        /// No such key of this app.
        case unknownKey
        /// The device's key was revoked.
        case revokedKey
        /// A step of Apple's validation failed (or the counter lost a race: `counter`).
        case invalid(step: String)
    }

    /// The key as stored before, and the counter it advanced to.
    public func verify(_ assertion: [UInt8], clientData: [UInt8], keyID: [UInt8], appID: String) async throws -> (key: AttestedKey, counter: UInt32) {
        guard let key = try await keys.key(keyID) else { throw Refusal.unknownKey }
        let counter = try check(assertion, clientData: clientData, key: key, appID: appID)
        // Another request may have advanced the counter since it was read.
        guard try await keys.advanceCounter(of: key.keyID, to: counter) else { throw Refusal.invalid(step: "counter") }
        return (key, counter)
    }

    /// The assertion checked against `key` as read, nothing recorded: the counter it carries, which
    /// the caller must then advance only if it is still above the stored one (refresh does so in
    /// the statement that rotates the family).
    public func check(_ assertion: [UInt8], clientData: [UInt8], key: AttestedKey, appID: String) throws -> UInt32 {
        guard key.appID == appID else { throw Refusal.unknownKey }
        if key.revoked { throw Refusal.revokedKey }
        guard let publicKey = try? P256.Signing.PublicKey(x963Representation: key.publicKey) else { throw Refusal.invalid(step: "public key") }
        do {
            return try verifier.verifyAssertion(
                assertion, clientDataHash: Array(SHA256.hash(data: clientData)), publicKey: publicKey, appId: appID, previousCounter: key.counter)
        } catch {
            throw Refusal.invalid(step: error.step.rawValue)
        }
    }
}

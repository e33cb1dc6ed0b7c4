import ArgumentParser
import Foundation
import SesameConfiguration
import SesameEncryption
import SesameServer
import SesameTokens

/// `sesame-auth rotate-signing-key`: replaces the token signing key on the operator's command.
struct RotateSigningKeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rotate-signing-key",
        abstract: "Replace the token signing key, then exit.",
        discussion: """
            By default the new key is published in the JWKS at once and signs after 10 minutes, so \
            verifiers that cache the JWKS learn it first; the previous key keeps verifying until \
            its tokens have expired. Auth also rotates by itself every SESAME_SIGNING_KEY_ROTATION.
            """)

    @Flag(help: "Sign with the new key at once (verifiers learn it from the rotation event or an unknown kid).")
    var now = false

    @Flag(help: "The previous key is compromised: stop it verifying now. Every outstanding token is refused and every app must attest again. Implies --now.")
    var revokePrevious = false

    func run() async throws {
        let (lead, revoke) = (now || revokePrevious ? Duration.zero : AuthMaintenance.publicationLead, revokePrevious)
        let rotation = try await withOneShotDatabase(AuthService.self, task: "rotate-signing-key") { database, configuration, logger in
            let keyring = try MasterKeyring(current: configuration.masterKey.current, previous: configuration.masterKey.previous)
            let store = SigningKeyStore(database: database, encryption: EnvelopeEncryption(keyring: keyring), logger: logger)
            return try await store.rotate(
                activatingAfter: lead, verifyRetiredFor: revoke ? nil : configuration.tokenLifetimes.retiredKeyVerification)
        }
        let format = ISO8601DateFormatter()
        print("New signing key \(rotation.kid): published now, signs from \(format.string(from: rotation.activatesAt)).")
        if revoke {
            print("Previous keys revoked: tokens they signed are refused from now on.")
        } else {
            print("Previous key verifies until \(format.string(from: rotation.previousVerifyUntil)).")
        }
    }
}

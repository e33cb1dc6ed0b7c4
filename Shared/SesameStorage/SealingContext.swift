import Foundation
import SesameDomain

/// What each kind of stored ciphertext is bound to (`EnvelopeEncryption`'s context), beside the
/// list of the columns that hold them (`EncryptedColumns`): a value copied into another row, or
/// another place, fails to open. These strings are part of the stored data: never change one.
public enum SealingContext {
    /// A config body of `appID` under `pattern`.
    public static func configBody(appID: String, pattern: String) -> String {
        "config_revisions.body:\(appID):\(pattern)"
    }

    /// A token signing key's private key.
    public static func signingKey(kid: String) -> String {
        "signing_keys.private_key_ciphertext:\(kid)"
    }

    /// A service key (such as the one user documents are found by).
    public static func serviceKey(name: String) -> String {
        "service_keys.key_ciphertext:\(name)"
    }

    /// A user's document, found by the keyed hash of the user.
    public static func userDocument(appID: String, userHash: some Sequence<UInt8>) -> String {
        "user_data.body:\(appID):\(Hex.encode(userHash))"
    }

    /// Chunk `index` of upload `uploadID` of one of `appID`'s blobs (see `BlobLayout`).
    public static func blobChunk(appID: String, uploadID: UUID, index: Int) -> String {
        "blob_chunks.ciphertext:\(appID):\(uploadID.uuidString.lowercased()):\(index)"
    }

    /// An app's pin registry signing key (RSA, DER).
    public static func pinSigningKey(appID: String, keyID: UUID) -> String {
        "pin_signing_keys.private_key_ciphertext:\(appID):\(keyID.uuidString.lowercased())"
    }

    /// The request of one of `appID`'s proposed changes, while it waits for approval.
    public static func proposalRequest(appID: String, proposalID: UUID) -> String {
        "change_proposals.request_sealed:\(appID):\(proposalID.uuidString.lowercased())"
    }

    /// `appID`'s DeviceCheck private key (PEM).
    public static func appleCredentials(appID: String) -> String {
        "apple_credentials.private_key_ciphertext:\(appID)"
    }

    /// The DeviceCheck token an install of `appID` sent with the attest of its key `keyID` (base64url).
    public static func deviceToken(appID: String, keyID: String) -> String {
        "attested_keys.device_token_ciphertext:\(appID):\(keyID)"
    }

    /// The headers one of `appID`'s attested relays injects (a JSON object of names and values),
    /// bound to the upstream's origin (`RelayRules.origin`): a relay moved elsewhere, by the API or
    /// by a write to its row, cannot open them, so its key never follows it.
    public static func relayHeaders(appID: String, name: String, origin: String) -> String {
        "relays.headers_ciphertext:\(appID):\(name):\(origin)"
    }

    /// How relay headers were sealed before migration 35 bound them to the upstream's origin: read
    /// only to seal such a row again, bound (admin's `RelayStore.bindUnboundHeaders`, at its start).
    public static func relayHeadersUnbound(appID: String, name: String) -> String {
        "relays.headers_ciphertext:\(appID):\(name)"
    }

    /// The signing secret of one of `appID`'s webhooks.
    public static func webhookSecret(appID: String, webhookID: UUID) -> String {
        "webhooks.secret_ciphertext:\(appID):\(webhookID.uuidString.lowercased())"
    }
}

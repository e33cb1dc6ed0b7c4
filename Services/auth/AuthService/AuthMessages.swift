import Hummingbird
import SesameDomain

// Auth's messages are the document's (generated into `Components`; see openapi-generator-config.yaml).

/// `POST /v1/auth/challenge`'s answer: `nonce` is base64 of 32 random bytes; the app passes their
/// SHA-256 as `clientDataHash`.
typealias ChallengeResponse = Components.Schemas.Challenge
typealias ChallengeRequest = Components.Schemas.ChallengeRequest
/// `POST /v1/auth/attest`.
typealias AttestRequest = Components.Schemas.AttestRequest
/// `POST /v1/auth/refresh`: `assertion` and `clientData` come together or not at all.
typealias RefreshRequest = Components.Schemas.RefreshRequest
/// `POST /v1/auth/api-token`, with the install's access token as the bearer, and its answer.
typealias APITokenRequest = Components.Schemas.APITokenRequest
typealias APITokenResponse = Components.Schemas.APIToken
/// The token pair, as `attest` and `refresh` answer (always the `attested` tier).
typealias TokenResponse = Components.Schemas.TokenPair
/// `POST /v1/auth/debug` and `POST /v1/auth/unattested`, and what both answer: an access token
/// alone (exchange again when it expires).
typealias DebugTokenRequest = Components.Schemas.DebugTokenRequest
typealias UnattestedRequest = Components.Schemas.UnattestedRequest
typealias TierTokenResponse = Components.Schemas.TierToken
/// `POST /v1/auth/attestation-failure`: an attestation that failed on the device, reported by SesameKit.
typealias AttestationFailureReport = Components.Schemas.AttestationFailureReport
/// `POST /v1/verify/consume` and what a consumed token says, for the backend to decide on.
typealias ConsumeRequest = Components.Schemas.ConsumeRequest
typealias ConsumeResponse = Components.Schemas.ConsumedToken
/// `POST /v1/verify/assertion` (what `SesameClient.assertion(for:)` gives the app), and which
/// install of which app made an assertion that passed.
typealias AssertionRequest = Components.Schemas.AssertionCheckRequest
typealias AssertionResponse = Components.Schemas.AssertionCheck

extension ChallengeResponse: ResponseEncodable {}
extension APITokenResponse: ResponseEncodable {}
extension TokenResponse: ResponseEncodable {}
extension TierTokenResponse: ResponseEncodable {}
extension ConsumeResponse: ResponseEncodable {}
extension AssertionResponse: ResponseEncodable {}

/// The JSON object inside an assertion's client data (the app's own bytes, not a message of the API).
struct AssertionClientData: Decodable {
    let challenge: String
}

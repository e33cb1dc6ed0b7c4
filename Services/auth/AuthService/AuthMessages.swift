import Hummingbird
import SesameDomain

/// `POST /v1/auth/challenge` response.
struct ChallengeResponse: ResponseEncodable {
    /// Base64 of 32 random bytes; the app passes SHA256 of these bytes as `clientDataHash`.
    let nonce: String
    let expiresIn: Int
}

/// `POST /v1/auth/attest` body.
struct AttestRequest: Decodable {
    let attestationObject: String
    let keyId: String
    let nonce: String
    let teamId: String
    let bundleId: String
    /// The app's version (`N.N.N`), carried in its tokens so revocations can target versions.
    let appVersion: String?
}

/// `POST /v1/auth/refresh` body. `assertion` and `clientData` come together or not at all.
struct RefreshRequest: Decodable {
    let refreshToken: String
    /// Base64 of the assertion object from `generateAssertion`.
    let assertion: String?
    /// Base64 of the exact bytes whose SHA-256 the app passed to `generateAssertion`: a JSON object
    /// with `"challenge"` set to a nonce from `POST /v1/auth/challenge`.
    let clientData: String?
    let appVersion: String?
}

/// `POST /v1/auth/api-token`, with the install's access token as the bearer.
struct APITokenRequest: Decodable {
    /// One of the app's API audiences; may be left out when the policy lists exactly one.
    let audience: String?
    /// The base64url SHA-256 of a value to bind the token to (its session token, a request body).
    let binding: String?
    /// A single-use token, which the app's backend consumes with `POST /v1/verify/consume`.
    let limitedUse: Bool?
}

struct APITokenResponse: ResponseEncodable {
    let token: String
    /// Its lifetime in seconds.
    let expiresIn: Int
    let audience: String
    /// Whether it is single use.
    let limitedUse: Bool
}

/// The token pair, as `attest` and `refresh` answer.
struct TokenResponse: ResponseEncodable {
    let accessToken: String
    let refreshToken: String
    /// The access token's lifetime in seconds.
    let expiresIn: Int
    /// Always `attested`: only attested installs hold refresh tokens.
    var tier = TrustTier.attested
}

/// `POST /v1/auth/debug` body.
struct DebugTokenRequest: Decodable {
    /// A debug token from `sesame debug-tokens create`.
    let debugToken: String
    let teamId: String
    let bundleId: String
    let appVersion: String?
}

/// `POST /v1/auth/unattested` body.
struct UnattestedRequest: Decodable {
    /// A nonce from `POST /v1/auth/challenge`, spent by this request.
    let nonce: String
    let teamId: String
    let bundleId: String
    let appVersion: String?
}

/// What `debug` and `unattested` answer: an access token alone (exchange again when it expires).
struct TierTokenResponse: ResponseEncodable {
    let accessToken: String
    /// The access token's lifetime in seconds.
    let expiresIn: Int
    let tier: TrustTier
}

/// The JSON object inside an assertion's client data.
struct AssertionClientData: Decodable {
    let challenge: String
}

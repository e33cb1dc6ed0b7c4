import Hummingbird

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

/// The token pair, as `attest` and `refresh` answer.
struct TokenResponse: ResponseEncodable {
    let accessToken: String
    let refreshToken: String
    /// The access token's lifetime in seconds.
    let expiresIn: Int
}

/// The JSON object inside an assertion's client data.
struct AssertionClientData: Decodable {
    let challenge: String
}

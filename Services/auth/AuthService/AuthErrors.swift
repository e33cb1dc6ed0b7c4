import AppAttest
import HTTPTypes
import SesameHTTP

/// Every refusal auth answers with: a stable code for programs, a message that says what to do.
enum AuthErrors {
    static let unknownApp = APIError(
        .notFound, code: "unknown_app", message: "No app with this team id and bundle id is registered with Sesame.")
    static let invalidChallenge = APIError(
        .unauthorized, code: "invalid_challenge",
        message: "The challenge is unknown, expired or already used; request a new one from /v1/auth/challenge.")
    static func attestationRefused(_ error: AppAttestError) -> APIError {
        APIError(
            .unauthorized, code: "attestation_invalid",
            message: "The App Attest attestation was refused at step '\(error.step.rawValue)'.")
    }
    static let keyAlreadyAttested = APIError(
        .conflict, code: "key_already_attested", message: "This App Attest key was attested before; generate a new key and attest it.")
    static let environmentNotAllowed = APIError(
        .forbidden, code: "environment_not_allowed", message: "This app does not accept keys from the App Attest development environment.")
    static let invalidToken = APIError.invalidToken("The token is invalid or expired; attest again.")
    static let tokenRevoked = APIError.tokenRevoked("The token has been revoked; attest again with a new key.")
    static let refreshTokenReused = APIError(
        .unauthorized, code: "refresh_token_reused",
        message: "This refresh token was already used; its whole family is now revoked. Attest again.")
    static let assertionRequired = APIError(
        .unauthorized, code: "assertion_required",
        message: "This app requires an App Attest assertion with every refresh: send assertion and clientData.")
    static func assertionRefused(_ reason: String) -> APIError {
        APIError(.unauthorized, code: "assertion_invalid", message: "The App Attest assertion was refused: \(reason).")
    }
}

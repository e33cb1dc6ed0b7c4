import AppAttest
import HTTPTypes
import SesameHTTP
import SesameStorage

/// Every refusal auth answers with: a stable code for programs, a message that says what to do.
enum AuthErrors {
    static let unknownApp = APIError(
        .notFound, code: AuthErrorCode.unknownApp, message: "No app with this team id and bundle id is registered with Sesame.")
    static let invalidChallenge = APIError(
        .unauthorized, code: AuthErrorCode.invalidChallenge,
        message: "The challenge is unknown, expired or already used; request a new one from /v1/auth/challenge.")
    static func attestationRefused(_ error: AppAttestError) -> APIError {
        APIError(
            .unauthorized, code: AuthErrorCode.attestationInvalid,
            message: "The App Attest attestation was refused at step '\(error.step.rawValue)'.")
    }
    static let keyAlreadyAttested = APIError(
        .conflict, code: AuthErrorCode.keyAlreadyAttested, message: "This App Attest key was attested before; generate a new key and attest it.")
    static let environmentNotAllowed = APIError(
        .forbidden, code: AuthErrorCode.environmentNotAllowed, message: "This app does not accept keys from the App Attest development environment.")
    static let invalidToken = APIError.invalidToken("The token is invalid or expired; attest again.")
    static let tokenRevoked = APIError.tokenRevoked("The token has been revoked; attest again with a new key.")
    static let refreshTokenReused = APIError(
        .unauthorized, code: AuthErrorCode.refreshTokenReused,
        message: "This refresh token was already used; its whole family is now revoked. Attest again.")
    static let assertionRequired = APIError(
        .unauthorized, code: AuthErrorCode.assertionRequired,
        message: "This app requires an App Attest assertion with every refresh: send assertion and clientData.")
    static let debugTokensNotAllowed = APIError(
        .forbidden, code: AuthErrorCode.debugTokensNotAllowed,
        message: "This production deployment refuses debug tokens for this app; its policy can allow them (allowDebugTokensInProduction).")
    static func debugTokenRefused(_ refusal: DebugTokenStore.Refusal) -> APIError {
        switch refusal {
        case .unknown: APIError(.unauthorized, code: AuthErrorCode.debugTokenInvalid, message: "The debug token is not one of this app's.")
        case .expired: APIError(.unauthorized, code: AuthErrorCode.debugTokenExpired, message: "The debug token has expired; create a new one.")
        case .revoked: APIError(.unauthorized, code: AuthErrorCode.debugTokenRevoked, message: "The debug token has been revoked.")
        }
    }
    static let unattestedNotAdmitted = APIError(
        .forbidden, code: AuthErrorCode.unattestedNotAdmitted,
        message: "This app admits only devices that pass App Attest (its policy's admitUnattested is off).")
    static let apiTokenNeedsAttestation = APIError(
        .forbidden, code: AuthErrorCode.tierNotAllowed, message: "API tokens are issued to installs that passed App Attest only.")
    static let audienceNotAllowed = APIError(
        .forbidden, code: AuthErrorCode.audienceNotAllowed,
        message: "This audience is not one of the app's API audiences; its policy lists them (apiAudiences).")
    static let invalidBackendKey = APIError(
        .unauthorized, code: AuthErrorCode.invalidBackendKey,
        message: "Send a live backend key of the app as the bearer (sesame backend-keys create); provisioning keys are not accepted here.")
    static let apiTokenInvalid = APIError(.unauthorized, code: AccessTokenErrorCode.invalidToken, message: "The API token is invalid or expired.")
    static let wrongApp = APIError(.forbidden, code: AuthErrorCode.wrongApp, message: "This token was issued for another app than the backend key's.")
    static let audienceMismatch = APIError(.forbidden, code: AuthErrorCode.audienceMismatch, message: "This token was issued for another audience.")
    static let notSingleUse = APIError(
        .unprocessableContent, code: AuthErrorCode.notSingleUse,
        message: "This token is not single use: verify it offline with the JWKS, or have the app ask for a limited-use token.")
    static let audienceRequired = APIError(
        .unprocessableContent, code: AuthErrorCode.audienceRequired,
        message: "The app's policy lists several API audiences and this backend key is bound to none: send your \"audience\", or make a backend key for it.")
    static let installRevoked = APIError(
        .forbidden, code: AccessTokenErrorCode.tokenRevoked, message: "An emergency revocation covers this install: refuse the action; the app attests again.")
    static let alreadyConsumed = APIError(.conflict, code: AuthErrorCode.alreadyConsumed, message: "This single-use token was consumed already.")
    static let unknownAttestedKey = APIError(.notFound, code: AuthErrorCode.keyNotFound, message: "No attested key of this app has this id.")
    static let deviceRevoked = APIError(.forbidden, code: AuthErrorCode.deviceRevoked, message: "This device's key was revoked: refuse the action.")
    static let deviceBanned = APIError(
        .forbidden, code: AuthErrorCode.deviceBanned,
        message: "This device is banned from the app (its DeviceCheck bit is set); a new key does not lift the ban, an admin does.")
    static let deviceCheckRequired = APIError(
        .forbidden, code: AuthErrorCode.deviceCheckRequired,
        message: "This app bans devices through DeviceCheck: an attest must carry deviceToken (DCDevice.generateToken(), base64). Without one the install uses the lower tiers.")
    static let deviceTokenInvalid = APIError(
        .unauthorized, code: AuthErrorCode.deviceTokenInvalid,
        message: "Apple refused the DeviceCheck token: send a fresh one from DCDevice.generateToken() made by this app's build.")
    static let deviceTokenReused = APIError(
        .unauthorized, code: AuthErrorCode.deviceTokenReused,
        message: "This DeviceCheck token was sent with another key: send a fresh one from DCDevice.generateToken() with each attest.")
    static let riskTooHigh = APIError(
        .forbidden, code: AuthErrorCode.riskTooHigh,
        message: "This install was revoked: Apple's risk metric for its device is above the app's limit (maxRiskMetric).")
    /// `assertionRefused`'s code, for callers that tell it apart.
    static let assertionInvalidCode = "assertion_invalid"
    static func assertionRefused(_ reason: String) -> APIError {
        APIError(.unauthorized, code: AuthErrorCode.assertionInvalid, message: "The App Attest assertion was refused: \(reason).")
    }
}

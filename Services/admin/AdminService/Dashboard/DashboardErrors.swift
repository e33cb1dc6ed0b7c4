import HTTPTypes
import SesameHTTP
import WebAuthn

/// The dashboard's sign-in refusals.
enum DashboardErrors {
    static let notConfigured = APIError(
        .serviceUnavailable, code: AdminErrorCode.dashboardNotConfigured,
        message: "Passkey sign-in needs SESAME_DASHBOARD_ORIGIN: the origin the dashboard is served from.")
    static let invitationInvalid = APIError(
        .notFound, code: AdminErrorCode.invitationInvalid, message: "This invitation is unknown, already used or expired; ask for a new one.")
    static let accountExists = APIError(
        .conflict, code: AdminErrorCode.accountExists,
        message: "This email already has a Sesame account: sign in with its passkey, then accept the invitation.")
    static let invitationForAnotherAccount = APIError(
        .forbidden, code: AdminErrorCode.invitationForAnotherAccount,
        message: "This invitation is for another email than the account signed in; sign in as the invited person.")
    static let originRefused = APIError(
        .forbidden, code: AdminErrorCode.originRefused, message: "Passkey ceremonies are accepted from the dashboard's own page only.")
    static let passkeyExists = APIError(.conflict, code: AdminErrorCode.passkeyExists, message: "This passkey is registered already.")
    static let challengeInvalid = APIError(
        .unauthorized, code: AdminErrorCode.invalidChallenge, message: "The sign-in challenge is unknown, expired or already used; start again.")
    static let passkeyUnknown = APIError(
        .unauthorized, code: AdminErrorCode.passkeyUnknown, message: "This passkey is not registered with Sesame; sign in with another, or ask for an invitation.")
    static func passkeyRefused(_ error: WebAuthnError) -> APIError {
        APIError(.unauthorized, code: AdminErrorCode.passkeyRefused, message: "The passkey was refused at step '\(error.step.rawValue)'.")
    }
}

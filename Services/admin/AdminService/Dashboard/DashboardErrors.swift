import HTTPTypes
import SesameHTTP
import WebAuthn

/// The dashboard's sign-in refusals.
enum DashboardErrors {
    static let notConfigured = APIError(
        .serviceUnavailable, code: "dashboard_not_configured",
        message: "Passkey sign-in needs SESAME_DASHBOARD_ORIGIN: the origin the dashboard is served from.")
    static let invitationInvalid = APIError(
        .notFound, code: "invitation_invalid", message: "This invitation is unknown, already used or expired; ask for a new one.")
    static let challengeInvalid = APIError(
        .unauthorized, code: "invalid_challenge", message: "The sign-in challenge is unknown, expired or already used; start again.")
    static let passkeyUnknown = APIError(
        .unauthorized, code: "passkey_unknown", message: "This passkey is not registered with Sesame; sign in with another, or ask for an invitation.")
    static func passkeyRefused(_ error: WebAuthnError) -> APIError {
        APIError(.unauthorized, code: "passkey_refused", message: "The passkey was refused at step '\(error.step.rawValue)'.")
    }
}

import HTTPTypes
import SesameDomain
import SesameHTTP

/// Every refusal the management API answers with: a stable code, and a message that says what to do.
enum AdminErrors {
    static let missingCredential = APIError(
        .unauthorized, code: "unauthorized",
        message: "Send a provisioning key as 'Authorization: Bearer sk_prod_…' (the sesame CLI reads it from SESAME_KEY).")
    static let invalidCredential = APIError(
        .unauthorized, code: "unauthorized", message: "This provisioning key is unknown or revoked; ask for a new one.")
    static let operatorRequired = APIError(
        .unauthorized, code: "unauthorized",
        message: "Registering a new app needs the operator token (SESAME_OPERATOR_TOKEN) or 'sesame-admin keys create' run next to the database.")
    /// The same answer whether the app does not exist or belongs to another key: no hint either way.
    static let appNotFound = APIError(
        .notFound, code: "app_not_found", message: "No app with this team id and bundle id is managed with this credential.")
    static let keyNotFound = APIError(
        .notFound, code: "key_not_found", message: "No active provisioning key of this app matches.")
    static let backendKeyNotFound = APIError(
        .notFound, code: "backend_key_not_found", message: "No active backend key of this app has this id (see GET /v1/admin/backend-keys).")
    static let accountRequired = APIError(
        .forbidden, code: "account_required",
        message: "People are managed by an owner signed in to the dashboard (invitations also by the operator), not with a provisioning key.")
    static let accountNotFound = APIError(.notFound, code: "account_not_found", message: "No person with this email is in the app.")
    static let lastOwner = APIError(
        .conflict, code: "last_owner", message: "The app would be left without an owner: make someone else owner first.")
    static let lastPasskey = APIError(
        .conflict, code: "last_passkey",
        message: "This is the person's last passkey: remove the person instead (a new invitation starts them afresh), or add another passkey first.")
    static let passkeyNotFound = APIError(.notFound, code: "passkey_not_found", message: "No such passkey of this person.")
    static let personInOtherApps = APIError(
        .forbidden, code: "person_in_other_apps",
        message: "This person also works on apps you do not own: their passkeys and sessions are theirs and those owners' to manage. Remove them from your app instead.")
    static let sessionExpired = APIError(
        .unauthorized, code: "session_expired", message: "The dashboard session has ended (signed out, idle or too old); sign in again.")
    static let csrfRefused = APIError(
        .forbidden, code: "csrf_refused", message: "This change did not come from the dashboard's own page (missing or wrong X-CSRF-Token or Origin).")
    static func roleTooLow(_ role: AccountRole, required: AccountRole) -> APIError {
        APIError(
            .forbidden, code: "role_too_low",
            message: "Your role in this app is \(role.rawValue); this needs \(required.rawValue). Ask an owner of the app.")
    }
    static let deviceNotFound = APIError(
        .notFound, code: "device_not_found", message: "No live attested device of this app has that key id; see GET /v1/admin/devices.")
    static func debugTokenNameTaken(_ name: String) -> APIError {
        APIError(
            .conflict, code: "debug_token_exists",
            message: "A live debug token is already named '\(name)'; revoke it first ('sesame debug-tokens revoke \(name)') or pick another name.")
    }
    static func debugTokenNotFound(_ target: String) -> APIError {
        APIError(.notFound, code: "debug_token_not_found", message: "No live debug token of this app is named '\(target)' or has that id.")
    }
    static func invalidPattern(_ description: String) -> APIError {
        APIError(.badRequest, code: "invalid_version_pattern", message: description + ".")
    }
    static func configTooLarge(limit: Int) -> APIError {
        APIError(.contentTooLarge, code: "config_too_large", message: "The config is larger than \(limit) bytes (SESAME_MAX_CONFIG_BYTES).")
    }
    static func patternNotFound(_ pattern: String) -> APIError {
        APIError(.notFound, code: "pattern_not_found", message: "No config is published for version pattern '\(pattern)'; see 'sesame config view'.")
    }
    static func revisionNotFound(_ pattern: String, _ revision: Int64) -> APIError {
        APIError(
            .notFound, code: "revision_not_found",
            message: "Version pattern '\(pattern)' has no revision \(revision) with a config to restore; see 'sesame config history'.")
    }
    static func tooManyOverrides(limit: Int) -> APIError {
        APIError(
            .conflict, code: "too_many_overrides",
            message: "The app already has \(limit) device overrides, the most it may: remove some ('sesame config overrides') first. Overrides are for testers' devices; a share of installs is a rollout.")
    }
    static func overrideNotFound(_ pattern: String) -> APIError {
        APIError(.notFound, code: "override_not_found", message: "That install has no device override of version pattern '\(pattern)'.")
    }
    static func rolloutInFlight(_ pattern: String) -> APIError {
        APIError(
            .conflict, code: "rollout_in_progress",
            message: "A staged rollout of version pattern '\(pattern)' is in flight: complete it ('sesame config rollout complete \(pattern)') or roll it back ('sesame config rollout rollback \(pattern)') first.")
    }
    static func noRolloutInFlight(_ pattern: String) -> APIError {
        APIError(
            .notFound, code: "rollout_not_found",
            message: "No staged rollout of version pattern '\(pattern)' is in flight; start one with 'sesame config upload --rollout PERCENT'.")
    }
    static func rolloutNotWider(current basisPoints: Int) -> APIError {
        APIError(
            .conflict, code: "rollout_not_wider",
            message: "The rollout already reaches \(RolloutBucket.percentText(basisPoints: basisPoints)) %; widen it to more, or pause or roll it back.")
    }
    static func rolloutAlready(_ state: String) -> APIError {
        APIError(.conflict, code: "rollout_state", message: "The rollout is already \(state).")
    }
    static func configInvalid(_ violations: [APIError.Violation], what: String) -> APIError {
        let shown = violations.prefix(3).map { "\($0.path.isEmpty ? "the config" : $0.path) \($0.message)" }.joined(separator: "; ")
        return APIError(
            .unprocessableContent, code: "config_invalid",
            message: "\(what) does not match its schema (\(violations.count) violation\(violations.count == 1 ? "" : "s"): \(shown)\(violations.count > 3 ? "; …" : "")).",
            violations: violations)
    }
    static func schemaInvalid(_ problem: String) -> APIError {
        APIError(.unprocessableContent, code: "schema_invalid", message: "The schema cannot be used: \(problem).")
    }
    static func schemaTooComplex(_ reason: String) -> APIError {
        APIError(
            .unprocessableContent, code: "schema_too_complex",
            message: "The schema is too costly to check against this config: \(reason). Simplify its patterns or references, or the config's nesting.")
    }
    static func schemaNotFound(_ scope: String) -> APIError {
        APIError(.notFound, code: "schema_not_found", message: "No schema is attached to \(scope).")
    }
    static func noMatch(_ version: String) -> APIError {
        APIError(.notFound, code: "no_matching_config", message: "No published pattern matches version \(version); upload one for '*' as a default.")
    }
    static func storedRuleUnreadable(_ problem: String) -> APIError {
        APIError(
            .internalServerError, code: "stored_rule_unreadable",
            message: "A stored kill switch or revocation of this app cannot be read (\(problem)); delivery refuses the app until it is fixed.")
    }
}

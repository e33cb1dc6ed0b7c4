import HTTPTypes
import SesameApple
import SesameDomain
import SesameHTTP

/// Every refusal the management API answers with: a stable code, and a message that says what to do.
enum AdminErrors {
    /// The app already has as many schema checks in hand as it may (`SchemaValidationPool`).
    static let schemaValidationBusy = APIError(
        .tooManyRequests, code: AdminErrorCode.schemaValidationBusy,
        message: "This app's configs are being checked against their schemas \(SchemaValidationPool.perApp) at a time already; try again shortly.",
        headers: [.retryAfter: "1"])
    static let missingCredential = APIError(
        .unauthorized, code: AdminErrorCode.unauthorized,
        message: "Send a provisioning key as 'Authorization: Bearer sk_prod_…' (the sesame CLI reads it from SESAME_KEY).")
    static let invalidCredential = APIError(
        .unauthorized, code: AdminErrorCode.unauthorized, message: "This provisioning key is unknown or revoked; ask for a new one.")
    static let operatorRequired = APIError(
        .unauthorized, code: AdminErrorCode.unauthorized,
        message: "Registering a new app needs the operator token (SESAME_OPERATOR_TOKEN) or 'sesame-admin keys create' run next to the database.")
    /// The same answer whether the app does not exist or belongs to another key: no hint either way.
    static let appNotFound = APIError(
        .notFound, code: AdminErrorCode.appNotFound, message: "No app with this team id and bundle id is managed with this credential.")
    static let keyNotFound = APIError(
        .notFound, code: AdminErrorCode.keyNotFound, message: "No active provisioning key of this app matches.")
    static let appleCredentialsNotSet = APIError(
        .notFound, code: AdminErrorCode.appleCredentialsNotSet,
        message: "The app has no DeviceCheck key: set one with PUT /v1/admin/apple/credentials (sesame apple set).")
    static let backendKeyNotFound = APIError(
        .notFound, code: AdminErrorCode.backendKeyNotFound, message: "No active backend key of this app has this id (see GET /v1/admin/backend-keys).")
    static let accountRequired = APIError(
        .forbidden, code: AdminErrorCode.accountRequired,
        message: "People are managed by an owner signed in to the dashboard (invitations also by the operator), not with a provisioning key.")
    static let accountNotFound = APIError(.notFound, code: AdminErrorCode.accountNotFound, message: "No person with this email is in the app.")
    static let lastOwner = APIError(
        .conflict, code: AdminErrorCode.lastOwner, message: "The app would be left without an owner: make someone else owner first.")
    static let lastPasskey = APIError(
        .conflict, code: AdminErrorCode.lastPasskey,
        message: "This is the person's last passkey: remove the person instead (a new invitation starts them afresh), or add another passkey first.")
    static let passkeyNotFound = APIError(.notFound, code: AdminErrorCode.passkeyNotFound, message: "No such passkey of this person.")
    static let personInOtherApps = APIError(
        .forbidden, code: AdminErrorCode.personInOtherApps,
        message: "This person also works on apps you do not own: their passkeys and sessions are theirs and those owners' to manage. Remove them from your app instead.")
    static let sessionExpired = APIError(
        .unauthorized, code: AdminErrorCode.sessionExpired, message: "The dashboard session has ended (signed out, idle or too old); sign in again.")
    static let csrfRefused = APIError(
        .forbidden, code: AdminErrorCode.csrfRefused, message: "This change did not come from the dashboard's own page (missing or wrong X-CSRF-Token or Origin).")
    static func roleTooLow(_ role: AccountRole, required: AccountRole) -> APIError {
        APIError(
            .forbidden, code: AdminErrorCode.roleTooLow,
            message: "Your role in this app is \(role.rawValue); this needs \(required.rawValue). Ask an owner of the app.")
    }
    static let deviceNotFound = APIError(
        .notFound, code: AdminErrorCode.deviceNotFound, message: "No live attested device of this app has that key id; see GET /v1/admin/devices.")
    static let deviceNotBanned = APIError(
        .notFound, code: AdminErrorCode.deviceNotBanned, message: "No device of this app with that key id is banned; see GET /v1/admin/devices.")
    static func banUnavailable(_ why: String) -> APIError {
        APIError(.conflict, code: AdminErrorCode.banUnavailable, message: "The device cannot be banned: \(why).")
    }
    static func appleUnavailable(_ failure: DeviceCheckClient.Failure) -> APIError {
        APIError(.badGateway, code: AdminErrorCode.appleUnavailable, message: "Nothing was changed: \(failure). Try again.")
    }
    static func debugTokenNameTaken(_ name: String) -> APIError {
        APIError(
            .conflict, code: AdminErrorCode.debugTokenExists,
            message: "A live debug token is already named '\(name)'; revoke it first ('sesame debug-tokens revoke \(name)') or pick another name.")
    }
    static func debugTokenNotFound(_ target: String) -> APIError {
        APIError(.notFound, code: AdminErrorCode.debugTokenNotFound, message: "No live debug token of this app is named '\(target)' or has that id.")
    }
    static func invalidPattern(_ description: String) -> APIError {
        APIError(.badRequest, code: AdminErrorCode.invalidVersionPattern, message: description + ".")
    }
    static func configTooLarge(limit: Int) -> APIError {
        APIError(.contentTooLarge, code: AdminErrorCode.configTooLarge, message: "The config is larger than \(limit) bytes (SESAME_MAX_CONFIG_BYTES).")
    }
    static func patternNotFound(_ pattern: String) -> APIError {
        APIError(.notFound, code: AdminErrorCode.patternNotFound, message: "No config is published for version pattern '\(pattern)'; see 'sesame config view'.")
    }
    static func revisionNotFound(_ pattern: String, _ revision: Int64) -> APIError {
        APIError(
            .notFound, code: AdminErrorCode.revisionNotFound,
            message: "Version pattern '\(pattern)' has no revision \(revision) with a config to restore; see 'sesame config history'.")
    }
    static func tooManyOverrides(limit: Int) -> APIError {
        APIError(
            .conflict, code: AdminErrorCode.tooManyOverrides,
            message: "The app already has \(limit) device overrides, the most it may: remove some ('sesame config overrides') first. Overrides are for testers' devices; a share of installs is a rollout.")
    }
    static func overrideNotFound(_ pattern: String) -> APIError {
        APIError(.notFound, code: AdminErrorCode.overrideNotFound, message: "That install has no device override of version pattern '\(pattern)'.")
    }
    static func rolloutInFlight(_ pattern: String) -> APIError {
        APIError(
            .conflict, code: AdminErrorCode.rolloutInProgress,
            message: "A staged rollout of version pattern '\(pattern)' is in flight: complete it ('sesame config rollout complete \(pattern)') or roll it back ('sesame config rollout rollback \(pattern)') first.")
    }
    static func noRolloutInFlight(_ pattern: String) -> APIError {
        APIError(
            .notFound, code: AdminErrorCode.rolloutNotFound,
            message: "No staged rollout of version pattern '\(pattern)' is in flight; start one with 'sesame config upload --rollout PERCENT'.")
    }
    static func rolloutNotWider(current basisPoints: Int) -> APIError {
        APIError(
            .conflict, code: AdminErrorCode.rolloutNotWider,
            message: "The rollout already reaches \(RolloutBucket.percentText(basisPoints: basisPoints)) %; widen it to more, or pause or roll it back.")
    }
    static func rolloutAlready(_ state: String) -> APIError {
        APIError(.conflict, code: AdminErrorCode.rolloutState, message: "The rollout is already \(state).")
    }
    static func configInvalid(_ violations: [APIError.Violation], what: String) -> APIError {
        let shown = violations.prefix(3).map { "\($0.path.isEmpty ? "the config" : $0.path) \($0.message)" }.joined(separator: "; ")
        return APIError(
            .unprocessableContent, code: AdminErrorCode.configInvalid,
            message: "\(what) does not match its schema (\(violations.count) violation\(violations.count == 1 ? "" : "s"): \(shown)\(violations.count > 3 ? "; …" : "")).",
            violations: violations)
    }
    static func schemaInvalid(_ problem: String) -> APIError {
        APIError(.unprocessableContent, code: AdminErrorCode.schemaInvalid, message: "The schema cannot be used: \(problem).")
    }
    static func schemaTooComplex(_ reason: String) -> APIError {
        APIError(
            .unprocessableContent, code: AdminErrorCode.schemaTooComplex,
            message: "The schema is too costly to check against this config: \(reason). Simplify its patterns or references, or the config's nesting.")
    }
    static func schemaNotFound(_ scope: String) -> APIError {
        APIError(.notFound, code: AdminErrorCode.schemaNotFound, message: "No schema is attached to \(scope).")
    }
    static func noMatch(_ version: String) -> APIError {
        APIError(.notFound, code: AdminErrorCode.noMatchingConfig, message: "No published pattern matches version \(version); upload one for '*' as a default.")
    }
    static func storedRuleUnreadable(_ problem: String) -> APIError {
        APIError(
            .internalServerError, code: AdminErrorCode.storedRuleUnreadable,
            message: "A stored kill switch or revocation of this app cannot be read (\(problem)); delivery refuses the app until it is fixed.")
    }
}

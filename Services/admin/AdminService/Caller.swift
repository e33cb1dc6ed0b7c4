import Foundation
import HTTPTypes
import Hummingbird
import Logging
import SesameDomain
import SesameHTTP

/// Who is calling the management API.
enum Caller: Sendable, Equatable {
    /// A provisioning key, which manages exactly one app.
    case provisioningKey(keyID: UUID, appID: String)
    /// The operator token: may register apps and revoke any key.
    case `operator`
    /// A person signed in to the dashboard, acting on one of their apps with their role there.
    case account(accountID: UUID, email: String, appID: String, role: AccountRole)

    /// How the audit log names the caller (never the key itself).
    var auditName: String {
        switch self {
        case .provisioningKey(let keyID, _): "key:\(keyID.uuidString.lowercased())"
        case .operator: "operator"
        case .account(_, let email, _, _): "account:\(email)"
        }
    }

    var keyID: UUID? {
        if case .provisioningKey(let keyID, _) = self { return keyID }
        return nil
    }

    /// The one app the caller acts on; nil for the operator.
    var appID: String? {
        switch self {
        case .provisioningKey(_, let appID), .account(_, _, let appID, _): appID
        case .operator: nil
        }
    }
}

/// Turns `Authorization: Bearer …` (a provisioning key or the operator token), or a dashboard
/// session cookie with the app it names in `X-Sesame-App`, into a `Caller`, or refuses. A session
/// is an ambient credential, so every request it makes other than a read must carry the session's
/// CSRF token and come from the dashboard's origin, and the person's role must allow it
/// (`DashboardPermissions`).
struct AdminAuthenticator: Sendable {
    let keys: ProvisioningKeyStore
    let operatorToken: String?
    let accounts: AccountStore
    let dashboardOrigin: String?

    /// The caller, which may be the operator.
    func caller(of request: Request) async throws -> Caller {
        guard let credential = request.bearerCredential else {
            if let session = request.cookies[DashboardCookie.name]?.value { return try await account(of: request, sessionToken: session) }
            throw AdminErrors.missingCredential
        }
        if credential.hasPrefix(ProvisioningKeyStore.prefix) {
            guard let caller = try await keys.authenticate(credential) else { throw AdminErrors.invalidCredential }
            return caller
        }
        if let operatorToken, ConstantTime.equals(Array(credential.utf8), Array(operatorToken.utf8)) { return .operator }
        throw AdminErrors.invalidCredential
    }

    /// The app a provisioning key or a dashboard session acts on; the operator token is refused here.
    func app(of request: Request) async throws -> (appID: String, caller: Caller) {
        let caller = try await caller(of: request)
        guard let appID = caller.appID else {
            throw APIError(.forbidden, code: AdminErrorCode.provisioningKeyRequired, message: "Use a provisioning key of the app, not the operator token.")
        }
        return (appID, caller)
    }

    private func account(of request: Request, sessionToken: String) async throws -> Caller {
        guard let session = try await accounts.session(sessionToken) else { throw AdminErrors.sessionExpired }
        guard let appID = request.headers[SesameHeaders.app], let role = session.roles[appID] else { throw AdminErrors.appNotFound }
        if !DashboardPermissions.isRead(request.method) {
            try DashboardCSRF.check(request, sessionToken: sessionToken, origin: dashboardOrigin)
        }
        let required = DashboardPermissions.requiredRole(method: request.method, path: request.uri.path)
        guard role >= required else { throw AdminErrors.roleTooLow(role, required: required) }
        return .account(accountID: session.accountID, email: session.email, appID: appID, role: role)
    }
}

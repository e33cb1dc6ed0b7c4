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

    /// How the audit log names the caller (never the key itself).
    var auditName: String {
        switch self {
        case .provisioningKey(let keyID, _): "key:\(keyID.uuidString.lowercased())"
        case .operator: "operator"
        }
    }

    var keyID: UUID? {
        if case .provisioningKey(let keyID, _) = self { return keyID }
        return nil
    }
}

/// Turns `Authorization: Bearer …` into a `Caller`, or refuses with 401.
struct AdminAuthenticator: Sendable {
    let keys: ProvisioningKeyStore
    let operatorToken: String?

    /// The caller, which may be the operator.
    func caller(of request: Request) async throws -> Caller {
        guard let credential = request.bearerCredential else { throw AdminErrors.missingCredential }
        if credential.hasPrefix(ProvisioningKeyStore.prefix) {
            guard let caller = try await keys.authenticate(credential) else { throw AdminErrors.invalidCredential }
            return caller
        }
        if let operatorToken, ConstantTime.equals(Array(credential.utf8), Array(operatorToken.utf8)) { return .operator }
        throw AdminErrors.invalidCredential
    }

    /// The app a provisioning key manages; the operator token is refused here.
    func app(of request: Request) async throws -> (appID: String, caller: Caller) {
        let caller = try await caller(of: request)
        guard case .provisioningKey(_, let appID) = caller else {
            throw APIError(.forbidden, code: "provisioning_key_required", message: "Use a provisioning key of the app, not the operator token.")
        }
        return (appID, caller)
    }
}

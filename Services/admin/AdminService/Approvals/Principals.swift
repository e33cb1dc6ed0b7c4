import Foundation
import Logging
import PostgresNIO
import SesameStorage

/// Who stands behind a credential, for the two-person rule: a second credential of the same
/// principal is not a second person. A person (a dashboard account) is a principal; a key the
/// operator made is one; a key made by a key or a person stands for its maker's principal, however
/// many keys down. What Sesame cannot see (one human holding two accounts, or two operator-made
/// keys) it cannot tell apart: README, "Two-person approval", says what the rule guarantees.
enum Principals {
    /// The principal of a new key `keyID` made by `caller`.
    static func principalOfKey(_ keyID: UUID, madeBy caller: Caller, on connection: PostgresConnection, logger: Logger) async throws -> String {
        switch caller {
        case .operator:
            return "key:\(keyID.uuidString.lowercased())"
        case .account(_, let email, _, _):
            return "account:\(email)"
        case .provisioningKey(let maker, _):
            let rows = try await connection.query("SELECT principal FROM provisioning_keys WHERE key_id = \(maker)", logger: logger)
            for try await principal in rows.decode(String.self) { return principal }
            return "key:\(maker.uuidString.lowercased())"
        }
    }

    /// A credential's standing in an app: its principal, since when it has held its key or role
    /// there (nil for the operator), and whether it may act now.
    struct Standing: Sendable, Equatable {
        let principal: String
        let since: Date?
        let active: Bool
    }

    /// The standing of the credential the audit log names `name` (`key:…`, `account:…`, `operator`) in `appID`.
    static func standing(of name: String, appID: String, database: Database, logger: Logger) async throws -> Standing {
        if name == "operator" { return Standing(principal: name, since: nil, active: true) }
        if name.hasPrefix("key:"), let keyID = UUID(uuidString: String(name.dropFirst(4))) {
            let rows = try await database.client.query(
                """
                SELECT principal, created_at, revoked_at IS NULL AND pending_proposal IS NULL FROM provisioning_keys
                WHERE key_id = \(keyID) AND app_id = \(appID)
                """, logger: logger)
            for try await (principal, createdAt, active) in rows.decode((String, Date, Bool).self) {
                return Standing(principal: principal, since: createdAt, active: active)
            }
        } else if name.hasPrefix("account:") {
            let email = String(name.dropFirst(8))
            let rows = try await database.client.query(
                """
                SELECT r.granted_at FROM account_roles r JOIN accounts a ON a.account_id = r.account_id
                WHERE a.email = \(email) AND r.app_id = \(appID)
                """, logger: logger)
            for try await grantedAt in rows.decode(Date.self) { return Standing(principal: name, since: grantedAt, active: true) }
        }
        return Standing(principal: name, since: nil, active: false)
    }
}

import Foundation
import Logging
import PostgresNIO
import SesameDomain
import SesameJSON
import SesameStorage

/// A passkey as its owner, or an owner managing them, sees it: never its key.
struct PasskeySummary: Codable, Sendable {
    /// The credential id, base64url: what names it to revoke.
    let credentialId: String
    let createdAt: Date
    let lastUsedAt: Date?
}

/// Managing the people of an app: their roles, removing them, and a person's passkeys and
/// sessions. Every change locks the app's row first, so two owners acting at once cannot both
/// step down and leave the app without one; every change is audited.
///
/// A person removed from their last app has nothing left to sign in to: the account goes with its
/// passkeys and sessions, so an invitation starts them afresh (the way back for a lost passkey).
struct PeopleStore: Sendable {
    let database: Database
    let logger: Logger

    /// How a change to a person ended.
    enum Outcome: Sendable, Equatable {
        case done
        /// The email is not a person of the app.
        case notMember
        /// The app would be left without an owner.
        case lastOwner
        /// The passkey is the person's last: remove the person instead (a new invitation then
        /// starts them afresh).
        case lastPasskey
        /// No such passkey of the person.
        case passkeyNotFound
    }

    /// Gives `email` the role `role` in `appID`.
    func setRole(of email: String, in appID: String, to role: AccountRole, actor: String) async throws -> Outcome {
        try await database.client.withTransaction(logger: logger) { connection in
            guard let (accountID, current) = try await member(email, of: appID, locking: connection) else { return .notMember }
            if current == .owner, role != .owner, try await owners(of: appID, on: connection) <= 1 { return .lastOwner }
            try await connection.query(
                "UPDATE account_roles SET role = \(role.rawValue), granted_at = now() WHERE account_id = \(accountID) AND app_id = \(appID)",
                logger: logger)
            // Only owners invite: an owner no more keeps no way back in through links they sent.
            if current == .owner, role != .owner { try await cancelInvitations(issuedBy: email, in: appID, on: connection) }
            try await AuditLog.append(
                AuditEntry(
                    actor: actor, action: .accountRole,
                    details: ["email": .string(email), "from": .string(current.rawValue), "to": .string(role.rawValue)]),
                appID: appID, on: connection, logger: logger)
            return .done
        }
    }

    /// Takes `email` out of `appID`; when it was their last app, their account goes too.
    func remove(_ email: String, from appID: String, actor: String, revokingWhatTheyMade revokeMade: Bool = false) async throws -> Outcome {
        try await database.client.withTransaction(logger: logger) { connection in
            guard let (accountID, current) = try await member(email, of: appID, locking: connection) else { return .notMember }
            if current == .owner, try await owners(of: appID, on: connection) <= 1 { return .lastOwner }
            try await connection.query("DELETE FROM account_roles WHERE account_id = \(accountID) AND app_id = \(appID)", logger: logger)
            try await cancelInvitations(issuedBy: email, in: appID, on: connection)
            if revokeMade { try await revokeWhatTheyMade(email, in: appID, actor: actor, on: connection) }
            var remaining = 0
            for try await count in try await connection.query(
                "SELECT count(*)::int FROM account_roles WHERE account_id = \(accountID)", logger: logger
            ).decode(Int.self) { remaining = count }
            if remaining == 0 {
                try await connection.query("DELETE FROM dashboard_sessions WHERE account_id = \(accountID)", logger: logger)
                try await connection.query("DELETE FROM passkeys WHERE account_id = \(accountID)", logger: logger)
                try await connection.query("DELETE FROM accounts WHERE account_id = \(accountID)", logger: logger)
            }
            try await AuditLog.append(
                AuditEntry(
                    actor: actor, action: .accountRemove,
                    details: ["email": .string(email), "role": .string(current.rawValue), "accountDeleted": .bool(remaining == 0)]),
                appID: appID, on: connection, logger: logger)
            return .done
        }
    }

    /// The apps `email` holds a role in; empty when there is no such account.
    func apps(of email: String) async throws -> [String] {
        let rows = try await database.client.query(
            "SELECT r.app_id FROM account_roles r JOIN accounts a ON a.account_id = r.account_id WHERE a.email = \(email)", logger: logger)
        var apps: [String] = []
        for try await appID in rows.decode(String.self) { apps.append(appID) }
        return apps
    }

    /// Whether `accountID` is an owner of every app `email` holds a role in: only then may it
    /// manage that person's passkeys and sessions, which reach into those apps too.
    func ownsEveryApp(of email: String, caller accountID: UUID) async throws -> Bool {
        let rows = try await database.client.query(
            """
            SELECT count(*)::int FROM account_roles t JOIN accounts a ON a.account_id = t.account_id
            WHERE a.email = \(email) AND NOT EXISTS (
                SELECT 1 FROM account_roles c WHERE c.account_id = \(accountID) AND c.app_id = t.app_id AND c.role = 'owner')
            """, logger: logger)
        for try await outside in rows.decode(Int.self) { return outside == 0 }
        return false
    }

    /// Adds a passkey to the signed-in `accountID` (a second device), audited in each of its apps;
    /// false when that credential is registered already.
    func addPasskey(_ credentialID: [UInt8], publicKey: [UInt8], signCount: UInt32, to accountID: UUID, email: String) async throws -> Bool {
        try await database.client.withTransaction(logger: logger) { connection in
            var added = false
            for try await _ in try await connection.query(
                """
                INSERT INTO passkeys (credential_id, account_id, public_key, sign_count)
                VALUES (\(Data(credentialID)), \(accountID), \(Data(publicKey)), \(Int64(signCount)))
                ON CONFLICT (credential_id) DO NOTHING RETURNING 1
                """, logger: logger)
            { added = true }
            guard added else { return false }
            try await auditInEveryApp(
                of: accountID,
                AuditEntry(
                    actor: "account:\(email)", action: .accountPasskeyAdd,
                    details: ["credentialId": .string(Base64.urlEncode(credentialID))]),
                on: connection)
            return true
        }
    }

    /// The passkeys of `email`, oldest first.
    func passkeys(of email: String) async throws -> [PasskeySummary] {
        let rows = try await database.client.query(
            """
            SELECT p.credential_id, p.created_at, p.last_used_at FROM passkeys p JOIN accounts a ON a.account_id = p.account_id
            WHERE a.email = \(email) ORDER BY p.created_at, p.credential_id
            """, logger: logger)
        var passkeys: [PasskeySummary] = []
        for try await (id, createdAt, lastUsedAt) in rows.decode((Data, Date, Date?).self) {
            passkeys.append(PasskeySummary(credentialId: Base64.urlEncode(id), createdAt: createdAt, lastUsedAt: lastUsedAt))
        }
        return passkeys
    }

    /// Revokes one passkey of `email` (never the last) and ends every session of theirs, except
    /// `keepingSession` (the person revoking one of their own from this browser). Audited in each
    /// of their apps.
    func revokePasskey(_ credentialID: [UInt8], of email: String, actor: String, keepingSession: String? = nil) async throws -> Outcome {
        try await database.client.withTransaction(logger: logger) { connection in
            var found: (accountID: UUID, count: Int)?
            for try await row in try await connection.query(
                """
                SELECT a.account_id, (SELECT count(*)::int FROM passkeys p WHERE p.account_id = a.account_id) FROM accounts a
                WHERE a.email = \(email) FOR UPDATE
                """, logger: logger
            ).decode((UUID, Int).self) { found = row }
            guard let found else { return .passkeyNotFound }
            var deleted = false
            if found.count > 1 {
                for try await _ in try await connection.query(
                    "DELETE FROM passkeys WHERE credential_id = \(Data(credentialID)) AND account_id = \(found.accountID) RETURNING 1",
                    logger: logger)
                { deleted = true }
            } else {
                for try await _ in try await connection.query(
                    "SELECT 1 FROM passkeys WHERE credential_id = \(Data(credentialID)) AND account_id = \(found.accountID)", logger: logger)
                { return .lastPasskey }
            }
            guard deleted else { return .passkeyNotFound }
            try await endSessions(of: found.accountID, keeping: keepingSession, on: connection)
            try await auditInEveryApp(
                of: found.accountID,
                AuditEntry(actor: actor, action: .accountPasskeyRevoke, details: ["email": .string(email), "credentialId": .string(Base64.urlEncode(credentialID))]),
                on: connection)
            return .done
        }
    }

    /// Ends every session of `email`. Audited in each of their apps.
    func endSessions(of email: String, actor: String) async throws -> Outcome {
        try await database.client.withTransaction(logger: logger) { connection in
            var accountID: UUID?
            for try await id in try await connection.query("SELECT account_id FROM accounts WHERE email = \(email)", logger: logger).decode(UUID.self) {
                accountID = id
            }
            guard let accountID else { return .notMember }
            try await endSessions(of: accountID, keeping: nil, on: connection)
            try await auditInEveryApp(
                of: accountID, AuditEntry(actor: actor, action: .accountSessionsEnd, details: ["email": .string(email)]), on: connection)
            return .done
        }
    }

    /// Writes `entry` to the audit log of each app of `accountID`.
    func auditInEveryApp(of accountID: UUID, _ entry: AuditEntry, on connection: PostgresConnection) async throws {
        var apps: [String] = []
        for try await appID in try await connection.query(
            "SELECT app_id FROM account_roles WHERE account_id = \(accountID)", logger: logger
        ).decode(String.self) { apps.append(appID) }
        for appID in apps { try await AuditLog.append(entry, appID: appID, on: connection, logger: logger) }
    }

    private func endSessions(of accountID: UUID, keeping session: String?, on connection: PostgresConnection) async throws {
        let kept = session.map(BearerSecret.hash) ?? Data()
        try await connection.query(
            """
            UPDATE dashboard_sessions SET revoked_at = now()
            WHERE account_id = \(accountID) AND revoked_at IS NULL AND session_hash <> \(kept)
            """, logger: logger)
    }

    /// The account and role of `email` in `appID`, after locking the app's row (every change to
    /// an app's people is serialized on it); nil when they are not a person of the app.
    private func member(_ email: String, of appID: String, locking connection: PostgresConnection) async throws -> (UUID, AccountRole)? {
        try await connection.query("SELECT 1 FROM apps WHERE app_id = \(appID) FOR UPDATE", logger: logger)
        let rows = try await connection.query(
            """
            SELECT r.account_id, r.role FROM account_roles r JOIN accounts a ON a.account_id = r.account_id
            WHERE r.app_id = \(appID) AND a.email = \(email)
            """, logger: logger)
        for try await (accountID, role) in rows.decode((UUID, String).self) {
            guard let role = AccountRole(rawValue: role) else { return nil }
            return (accountID, role)
        }
        return nil
    }

    /// Revokes what `email` made in `appID`, so a removed person keeps no way back: every
    /// provisioning key that stands for them (made by them, or by a key of theirs, however many
    /// keys down), and the backend keys, debug tokens and webhooks they or those keys made. Each is
    /// audited as its own revocation (`key.revoke` reaches webhooks as `key.revoked`). Backend keys,
    /// and debug tokens made on the dashboard, from before makers were recorded (migration 27) say
    /// nothing of it, and are left.
    private func revokeWhatTheyMade(_ email: String, in appID: String, actor: String, on connection: PostgresConnection) async throws {
        let principal = "account:" + email
        try await revokeEach(
            "UPDATE provisioning_keys SET revoked_at = now() WHERE app_id = \(appID) AND principal = \(principal) AND revoked_at IS NULL RETURNING key_id",
            as: .keyRevoke, in: appID, actor: actor, on: connection
        ) { (keyID: UUID) in ["keyId": .string(keyID.uuidString.lowercased())] }
        // Who made a credential, as the audit log names them: the person, or any key that stands for them.
        var makers = [principal]
        for try await keyID in try await connection.query(
            "SELECT key_id FROM provisioning_keys WHERE app_id = \(appID) AND principal = \(principal)", logger: logger
        ).decode(UUID.self) { makers.append("key:" + keyID.uuidString.lowercased()) }
        try await revokeEach(
            """
            UPDATE debug_tokens SET revoked_at = now()
            WHERE app_id = \(appID) AND revoked_at IS NULL AND created_by = ANY(\(makers)) RETURNING name
            """, as: .debugTokenRevoke, in: appID, actor: actor, on: connection
        ) { (name: String) in ["name": .string(name)] }
        try await revokeEach(
            """
            UPDATE backend_keys SET revoked_at = now()
            WHERE app_id = \(appID) AND revoked_at IS NULL AND created_by = ANY(\(makers)) RETURNING key_id
            """, as: .backendKeyRevoke, in: appID, actor: actor, on: connection
        ) { (keyID: UUID) in ["keyId": .string(keyID.uuidString.lowercased())] }
        try await revokeEach(
            "DELETE FROM webhooks WHERE app_id = \(appID) AND created_by = ANY(\(makers)) RETURNING webhook_id",
            as: .webhookRemove, in: appID, actor: actor, on: connection
        ) { (webhookID: UUID) in ["webhookId": .string(webhookID.uuidString.lowercased())] }
    }

    /// Runs `statement`, which revokes what a removed person made and returns one value per row, and
    /// audits each row as `action` with `details` and the reason. The rows are read whole before the
    /// first entry is written: one statement at a time on the transaction's connection.
    private func revokeEach<Value: PostgresDecodable & Sendable>(
        _ statement: PostgresQuery, as action: AuditAction, in appID: String, actor: String, on connection: PostgresConnection,
        details: (Value) -> [String: JSONValue]
    ) async throws {
        var revoked: [Value] = []
        for try await value in try await connection.query(statement, logger: logger).decode(Value.self) { revoked.append(value) }
        for value in revoked {
            try await AuditLog.append(
                AuditEntry(actor: actor, action: action, details: details(value).merging(["reason": .string("its maker was removed")]) { $1 }),
                appID: appID, on: connection, logger: logger)
        }
    }

    /// Ends the open invitations `email` sent to `appID`.
    private func cancelInvitations(issuedBy email: String, in appID: String, on connection: PostgresConnection) async throws {
        try await connection.query(
            """
            UPDATE account_invitations SET expires_at = now()
            WHERE app_id = \(appID) AND invited_by = \("account:" + email) AND used_at IS NULL AND expires_at > now()
            """, logger: logger)
    }

    private func owners(of appID: String, on connection: PostgresConnection) async throws -> Int {
        for try await count in try await connection.query(
            "SELECT count(*)::int FROM account_roles WHERE app_id = \(appID) AND role = 'owner'", logger: logger
        ).decode(Int.self) { return count }
        return 0
    }
}

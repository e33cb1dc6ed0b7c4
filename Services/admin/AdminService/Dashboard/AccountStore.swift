import Foundation
import Logging
import PostgresNIO
import SesameDomain
import SesameJSON
import SesameStorage

/// What a dashboard account may do in one app. Viewers read; editors also change configs, kill
/// switches, revocations and blobs; owners also manage keys, debug tokens, devices, the policy and
/// people.
enum AccountRole: String, Codable, Sendable, Comparable {
    case viewer, editor, owner

    private var rank: Int {
        switch self {
        case .viewer: 0
        case .editor: 1
        case .owner: 2
        }
    }

    static func < (lhs: AccountRole, rhs: AccountRole) -> Bool { lhs.rank < rhs.rank }
}

/// A signed-in person, as a session shows them.
struct DashboardSession: Sendable {
    let accountID: UUID
    let email: String
    /// App id → role.
    let roles: [String: AccountRole]
}

/// A person of an app, as the people list shows them.
struct Member: Codable, Sendable {
    let email: String
    let role: AccountRole
    let grantedAt: Date
}

/// An invitation, as its link opens it.
struct Invitation: Sendable {
    let appID: String
    let email: String
    let role: AccountRole
    /// Whether the invited email has an account already: it then accepts by signing in.
    let accountExists: Bool
}

/// The dashboard's people in PostgreSQL: invitations (single use, expiring), accounts with a role
/// per app, passkeys, WebAuthn challenges and sessions. Tokens (invitation, session) are 32 random
/// bytes, kept as SHA-256 only.
struct AccountStore: Sendable {
    let database: Database
    let logger: Logger

    static let invitationLifetime: Duration = .seconds(72 * 3600)
    /// A session ends after this long without a request…
    static let sessionIdleLifetime: Duration = .seconds(30 * 60)
    /// …and in any case this long after sign-in.
    static let sessionAbsoluteLifetime: Duration = .seconds(12 * 3600)
    static let challengeLifetime: Duration = .seconds(300)


    // MARK: Invitations

    /// A single-use invitation for `email` to `appID` as `role`; the token is returned once. With
    /// `pendingProposal`, it cannot be accepted until that proposal is approved (`activateInvitation`).
    func invite(
        appID: String, email: String, role: AccountRole, invitedBy: String, pendingProposal: UUID? = nil
    ) async throws -> (token: String, invitationID: UUID, expiresAt: Date) {
        let token = BearerSecret.generate()
        let invitationID = UUID()
        return try await database.client.withTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                """
                INSERT INTO account_invitations (invitation_id, token_hash, app_id, email, role, invited_by, expires_at, pending_proposal)
                VALUES (\(invitationID), \(BearerSecret.hash(token)), \(appID), \(email), \(role.rawValue), \(invitedBy),
                        now() + make_interval(secs => \(Self.invitationLifetime.components.seconds)), \(pendingProposal))
                RETURNING expires_at
                """, logger: logger)
            var expiresAt = Date()
            for try await at in rows.decode(Date.self) { expiresAt = at }
            var details: [String: JSONValue] = ["email": .string(email), "role": .string(role.rawValue)]
            if let pendingProposal { details["pendingProposal"] = .string(pendingProposal.uuidString.lowercased()) }
            try await AuditLog.append(AuditEntry(actor: invitedBy, action: .accountInvite, details: details), appID: appID, on: connection, logger: logger)
            return (token, invitationID, expiresAt)
        }
    }

    /// An invitation not yet accepted, as owners list it (never its token).
    struct PendingInvitationInfo: Codable, Sendable {
        @LowercaseUUID var id: UUID
        let email: String
        let role: AccountRole
        let invitedBy: String
        let createdAt: Date
        let expiresAt: Date
        /// The proposal a second person must approve before the link opens.
        @LowercaseOptionalUUID var pendingApproval: UUID?
    }

    /// The invitations of `appID` that may still be accepted, newest first.
    func openInvitations(of appID: String) async throws -> [PendingInvitationInfo] {
        let rows = try await database.client.query(
            """
            SELECT invitation_id, email, role, invited_by, created_at, expires_at, pending_proposal FROM account_invitations
            WHERE app_id = \(appID) AND used_at IS NULL AND expires_at > now() ORDER BY created_at DESC LIMIT 500
            """, logger: logger)
        var found: [PendingInvitationInfo] = []
        for try await (id, email, role, invitedBy, createdAt, expiresAt, pending) in rows.decode((UUID, String, String, String, Date, Date, UUID?).self) {
            guard let role = AccountRole(rawValue: role) else { continue }
            found.append(.init(id: id, email: email, role: role, invitedBy: invitedBy, createdAt: createdAt, expiresAt: expiresAt, pendingApproval: pending))
        }
        return found
    }

    /// Cancels invitation `id` of `appID` (its link stops opening now); false when there is no such open invitation.
    func cancelInvitation(_ id: UUID, of appID: String, actor: String) async throws -> Bool {
        try await database.client.withRefusingTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                """
                UPDATE account_invitations SET expires_at = now()
                WHERE invitation_id = \(id) AND app_id = \(appID) AND used_at IS NULL AND expires_at > now() RETURNING email
                """, logger: logger)
            var email: String?
            for try await cancelled in rows.decode(String.self) { email = cancelled }
            guard let email else { return false }
            try await AuditLog.append(
                AuditEntry(actor: actor, action: .accountInvitationCancel, details: ["email": .string(email), "invitationId": .string(id.uuidString.lowercased())]),
                appID: appID, on: connection, logger: logger)
            return true
        }
    }

    /// Lets the invitation waiting for `proposal` be accepted; false when none waits (withdrawn, expired).
    func activateInvitation(for proposal: UUID, appID: String) async throws -> Bool {
        let rows = try await database.client.query(
            """
            UPDATE account_invitations SET pending_proposal = NULL
            WHERE pending_proposal = \(proposal) AND app_id = \(appID) AND used_at IS NULL AND expires_at > now() RETURNING 1
            """, logger: logger)
        for try await _ in rows { return true }
        return false
    }

    /// The live invitation `token` opens; nil when unknown, used, expired or not approved yet.
    func invitation(_ token: String) async throws -> Invitation? {
        let rows = try await database.client.query(
            """
            SELECT i.app_id, i.email, i.role, EXISTS (SELECT 1 FROM accounts a WHERE a.email = i.email) FROM account_invitations i
            WHERE i.token_hash = \(BearerSecret.hash(token)) AND i.used_at IS NULL AND i.expires_at > now() AND i.pending_proposal IS NULL
            """, logger: logger)
        for try await (appID, email, role, accountExists) in rows.decode((String, String, String, Bool).self) {
            guard let role = AccountRole(rawValue: role) else { return nil }
            return Invitation(appID: appID, email: email, role: role, accountExists: accountExists)
        }
        return nil
    }

    /// How accepting an invitation ended.
    enum Acceptance: Sendable, Equatable {
        /// The account (new, or the signed-in one) holds the invited role now.
        case joined(accountID: UUID)
        /// Unknown, used, expired, or still waiting for a second person's approval.
        case invalid
        /// The invited email already has an account: only that account, signed in with one of its
        /// own passkeys, may accept (a new passkey never joins an existing account).
        case accountExists
        /// The signed-in account is not the invited email's.
        case wrongAccount
    }

    /// Spends the invitation for a person new to Sesame, in one transaction: the account made for
    /// the invited email, its role in the app, its first passkey. Refused (nothing spent) when the
    /// email already has an account.
    func acceptInvitation(_ token: String, passkeyID: [UInt8], publicKey: [UInt8], signCount: UInt32) async throws -> Acceptance {
        try await acceptance { connection in
            guard let invitation = try await spendInvitation(token, on: connection) else { return .invalid }
            let accounts = try await connection.query(
                """
                INSERT INTO accounts (account_id, email) VALUES (\(UUID()), \(invitation.email))
                ON CONFLICT (email) DO NOTHING RETURNING account_id
                """, logger: logger)
            var accountID: UUID?
            for try await id in accounts.decode(UUID.self) { accountID = id }
            // Thrown, not returned, so that the transaction rolls back and the invitation stays live.
            guard let accountID else { throw AcceptanceRefused.accountExists }
            try await connection.query(
                """
                INSERT INTO passkeys (credential_id, account_id, public_key, sign_count)
                VALUES (\(Data(passkeyID)), \(accountID), \(Data(publicKey)), \(Int64(signCount)))
                """, logger: logger)
            try await grant(invitation, to: accountID, on: connection)
            return .joined(accountID: accountID)
        }
    }

    /// Spends the invitation for the signed-in account `session`, which must be the invited
    /// email's; nothing is spent otherwise.
    func acceptInvitation(_ token: String, as session: DashboardSession) async throws -> Acceptance {
        try await acceptance { connection in
            guard let invitation = try await spendInvitation(token, on: connection) else { return .invalid }
            guard invitation.email == session.email else { throw AcceptanceRefused.wrongAccount }
            try await grant(invitation, to: session.accountID, on: connection)
            return .joined(accountID: session.accountID)
        }
    }

    /// Runs an acceptance in a transaction that an `AcceptanceRefused` rolls back and answers.
    private func acceptance(_ body: (PostgresConnection) async throws -> Acceptance) async throws -> Acceptance {
        do {
            return try await database.client.withTransaction(logger: logger) { try await body($0) }
        } catch let error as PostgresTransactionError {
            if let refusal = error.closureError as? AcceptanceRefused, error.rollbackError == nil { return refusal.acceptance }
            throw error
        }
    }

    /// A refusal thrown out of an acceptance's transaction to roll it back.
    private enum AcceptanceRefused: Error {
        case accountExists, wrongAccount

        var acceptance: Acceptance {
            switch self {
            case .accountExists: .accountExists
            case .wrongAccount: .wrongAccount
            }
        }
    }

    /// Marks the invitation used; nil when it is not live.
    private func spendInvitation(_ token: String, on connection: PostgresConnection) async throws -> Invitation? {
        let rows = try await connection.query(
            """
            UPDATE account_invitations SET used_at = now()
            WHERE token_hash = \(BearerSecret.hash(token)) AND used_at IS NULL AND expires_at > now() AND pending_proposal IS NULL
            RETURNING app_id, email, role
            """, logger: logger)
        for try await (appID, email, role) in rows.decode((String, String, String).self) {
            guard let role = AccountRole(rawValue: role) else { return nil }
            return Invitation(appID: appID, email: email, role: role, accountExists: false)
        }
        return nil
    }

    /// Gives `accountID` the invitation's role in its app, audited.
    private func grant(_ invitation: Invitation, to accountID: UUID, on connection: PostgresConnection) async throws {
        try await connection.query(
            """
            INSERT INTO account_roles (account_id, app_id, role) VALUES (\(accountID), \(invitation.appID), \(invitation.role.rawValue))
            ON CONFLICT (account_id, app_id) DO UPDATE SET role = EXCLUDED.role, granted_at = now()
            -- An invitation raises a role, never lowers one: accepting one as viewer must not demote an owner (the last one, say).
            WHERE EXCLUDED.role = 'owner' OR (EXCLUDED.role = 'editor' AND account_roles.role = 'viewer')
            """, logger: logger)
        try await AuditLog.append(
            AuditEntry(actor: "account:\(invitation.email)", action: .accountJoin, details: ["role": .string(invitation.role.rawValue)]),
            appID: invitation.appID, on: connection, logger: logger)
    }

    /// Whether `appID` is registered.
    func appExists(_ appID: String) async throws -> Bool {
        let rows = try await database.client.query("SELECT 1 FROM apps WHERE app_id = \(appID)", logger: logger)
        for try await _ in rows { return true }
        return false
    }

    /// The people of `appID` with their roles, owners first.
    func members(of appID: String) async throws -> [Member] {
        let rows = try await database.client.query(
            """
            SELECT a.email, r.role, r.granted_at FROM account_roles r JOIN accounts a ON a.account_id = r.account_id
            WHERE r.app_id = \(appID) ORDER BY r.role DESC, a.email
            """, logger: logger)
        var members: [Member] = []
        for try await (email, role, grantedAt) in rows.decode((String, String, Date).self) {
            if let role = AccountRole(rawValue: role) { members.append(Member(email: email, role: role, grantedAt: grantedAt)) }
        }
        return members
    }

    // MARK: Passkeys and challenges

    /// A passkey's account, public key and sign count.
    func passkey(_ credentialID: [UInt8]) async throws -> (accountID: UUID, publicKey: [UInt8], signCount: UInt32)? {
        let rows = try await database.client.query(
            "SELECT account_id, public_key, sign_count FROM passkeys WHERE credential_id = \(Data(credentialID))", logger: logger)
        for try await (accountID, publicKey, signCount) in rows.decode((UUID, Data, Int64).self) {
            return (accountID, Array(publicKey), UInt32(clamping: signCount))
        }
        return nil
    }

    /// Moves the passkey's count from `previous` to `count`; false when another sign-in moved it first.
    func recordSignIn(_ credentialID: [UInt8], from previous: UInt32, to count: UInt32) async throws -> Bool {
        let rows = try await database.client.query(
            """
            UPDATE passkeys SET sign_count = \(Int64(count)), last_used_at = now()
            WHERE credential_id = \(Data(credentialID)) AND sign_count = \(Int64(previous)) RETURNING 1
            """, logger: logger)
        for try await _ in rows { return true }
        return false
    }

    /// The single-use WebAuthn challenges of one ceremony (`register` or `sign-in`).
    func challenges(for ceremony: String) -> ChallengeStore {
        ChallengeStore(database: database, lifetime: Self.challengeLifetime, purpose: "dashboard-" + ceremony, logger: logger)
    }

    // MARK: Sessions

    /// A new session for `accountID`; its token goes in the cookie and nowhere else.
    func startSession(for accountID: UUID) async throws -> String {
        let token = BearerSecret.generate()
        try await database.client.query(
            """
            INSERT INTO dashboard_sessions (session_hash, account_id, expires_at)
            VALUES (\(BearerSecret.hash(token)), \(accountID), now() + make_interval(secs => \(Self.sessionAbsoluteLifetime.components.seconds)))
            """, logger: logger)
        return token
    }

    /// The live session `token` stands for, marked as seen now; nil when unknown, ended, idle too
    /// long or past its absolute end.
    func session(_ token: String) async throws -> DashboardSession? {
        guard token.utf8.count == 43 else { return nil }
        let rows = try await database.client.query(
            """
            UPDATE dashboard_sessions s SET last_seen_at = now()
            FROM accounts a
            WHERE s.session_hash = \(BearerSecret.hash(token)) AND a.account_id = s.account_id AND s.revoked_at IS NULL
              AND s.expires_at > now() AND s.last_seen_at > now() - make_interval(secs => \(Self.sessionIdleLifetime.components.seconds))
            RETURNING a.account_id, a.email
            """, logger: logger)
        var found: (UUID, String)?
        for try await row in rows.decode((UUID, String).self) { found = row }
        guard let (accountID, email) = found else { return nil }
        let roleRows = try await database.client.query(
            "SELECT app_id, role FROM account_roles WHERE account_id = \(accountID)", logger: logger)
        var roles: [String: AccountRole] = [:]
        for try await (appID, role) in roleRows.decode((String, String).self) { roles[appID] = AccountRole(rawValue: role) }
        return DashboardSession(accountID: accountID, email: email, roles: roles)
    }

    /// Ends the session `token`.
    func endSession(_ token: String) async throws {
        try await database.client.query(
            "UPDATE dashboard_sessions SET revoked_at = now() WHERE session_hash = \(BearerSecret.hash(token)) AND revoked_at IS NULL", logger: logger)
    }

    /// Ends every session of `accountID` (sign out everywhere).
    func endAllSessions(of accountID: UUID) async throws {
        try await database.client.query(
            "UPDATE dashboard_sessions SET revoked_at = now() WHERE account_id = \(accountID) AND revoked_at IS NULL", logger: logger)
    }
}

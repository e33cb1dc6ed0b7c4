import Foundation
import Hummingbird
import SesameDomain
import SesameHTTP

/// `accounts` (the app's people) and `accounts/invite`: the operator invites an app's first owner,
/// owners invite the rest. An invitation is a single-use link that expires in 72 hours. Owners
/// change roles and remove people (never the last owner), and manage a person's passkeys and
/// sessions when they own every app that person works on.
struct AccountRoutes {
    let authenticator: AdminAuthenticator
    let accounts: AccountStore
    let people: PeopleStore
    let approvals: ChangeApprovals
    let dashboardOrigin: String?

    struct RoleRequest: Decodable {
        let role: AccountRole
    }

    /// An `access:role` proposal, or the change made at once.
    struct RoleChange: Codable, Sendable {
        let email: String
        let role: AccountRole
    }

    /// An `access:invite` proposal: the invitation made waiting for it.
    struct PendingInvitation: Codable, Sendable {
        @LowercaseUUID var proposal: UUID
        let email: String
        let role: AccountRole
    }

    struct Done: ResponseEncodable {
        let message: String
    }

    struct PasskeysResponse: ResponseEncodable {
        let email: String
        let passkeys: [PasskeySummary]
    }

    struct InviteRequest: Decodable {
        let email: String
        let role: AccountRole
        /// The app, for the operator token; a signed-in owner invites to the app they act on.
        let teamId: String?
        let bundleId: String?
    }

    struct InviteResponse: ResponseEncodable {
        /// Give it to the invitee only: whoever opens it first registers a passkey with it.
        let inviteURL: String
        let email: String
        let role: AccountRole
        let appId: String
        let expiresAt: Date
        var message: String
        /// Made while the app's two-person rule is on: the link opens once a second person
        /// approves this proposal.
        var proposal: Proposal? = nil
    }

    struct MembersResponse: ResponseEncodable {
        let members: [Member]
    }

    func addRoutes(to group: RouterGroup<SesameRequestContext>) {
        group.get("accounts") { request, _ -> MembersResponse in
            let (appID, _) = try await authenticator.app(of: request)
            return MembersResponse(members: try await accounts.members(of: appID))
        }

        group.post("accounts/invite") { request, context -> Response in
            let caller = try await authenticator.caller(of: request)
            let body = try await request.decode(as: InviteRequest.self, context: context)
            let appID: String
            switch caller {
            case .operator:
                guard let teamID = body.teamId, let bundleID = body.bundleId else {
                    throw APIError.invalidField("teamId", "and \"bundleId\" name the app the operator invites to")
                }
                appID = "\(teamID).\(bundleID)"
                guard try await accounts.appExists(appID) else { throw AdminErrors.appNotFound }
            case .account(_, _, let ownAppID, _):
                appID = ownAppID
            case .provisioningKey:
                throw AdminErrors.accountRequired
            }
            let email = try Self.email(body.email)
            // While the app's two-person rule is on, a person is one more approver: invited waiting for a second person.
            let pending = try await approvals.accessGuarded(appID: appID, caller: caller) ? UUID() : nil
            let invitation = try await accounts.invite(
                appID: appID, email: email, role: body.role, invitedBy: caller.auditName, pendingProposal: pending)
            var answer = InviteResponse(
                inviteURL: Self.inviteURL(origin: dashboardOrigin, token: invitation.token), email: email, role: body.role, appId: appID,
                expiresAt: invitation.expiresAt,
                message: "Send this link to \(email) only: it registers a passkey as \(body.role.rawValue) of \(appID), once, within 72 hours.")
            guard let pending else { return try answer.response(from: request, context: context) }
            answer.proposal = try await approvals.proposeAccess(
                .invite, id: pending, appID: appID, body: PendingInvitation(proposal: pending, email: email, role: body.role),
                summary: "invite \(email) as \(body.role.rawValue)", caller: caller)
            answer.message += " It opens only once a second person approves change \(pending.uuidString.lowercased()) (the app's two-person rule)."
            var response = try answer.response(from: request, context: context)
            response.status = .accepted
            return response
        }

        addPersonRoutes(to: group)
    }

    struct InvitationsResponse: ResponseEncodable {
        let invitations: [AccountStore.PendingInvitationInfo]
    }

    /// The routes that change one person: an owner signed in, acting on their app.
    private func addPersonRoutes(to group: RouterGroup<SesameRequestContext>) {
        group.get("accounts/invitations") { request, _ -> InvitationsResponse in
            let (appID, _, _) = try await owner(of: request)
            return InvitationsResponse(invitations: try await accounts.openInvitations(of: appID))
        }

        group.delete("accounts/invitations/{id}") { request, context -> Done in
            let (appID, caller, _) = try await owner(of: request)
            guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)),
                try await accounts.cancelInvitation(id, of: appID, actor: caller.auditName)
            else { throw APIError(.notFound, code: AdminErrorCode.invitationNotFound, message: "The app has no such open invitation; see GET /v1/admin/accounts/invitations.") }
            return Done(message: "The invitation is cancelled: its link no longer opens.")
        }

        approvals.register(
            GuardedAccess.invite.key, PendingInvitation.self,
            prepare: { _, pending in ("invite \(pending.email) as \(pending.role.rawValue)", nil) },
            apply: { appID, pending, _ in
                guard try await accounts.activateInvitation(for: pending.proposal, appID: appID) else {
                    throw APIError(.conflict, code: AdminErrorCode.invitationGone, message: "The invitation expired or was cancelled; invite again.")
                }
                return AccessApproved(message: "The invitation of \(pending.email) is approved: its link opens now.")
            })
        approvals.register(
            GuardedAccess.role.key, RoleChange.self,
            prepare: { _, change in ("make \(change.email) \(change.role.rawValue)", nil) },
            apply: { appID, change, caller in
                try Self.check(try await people.setRole(of: change.email, in: appID, to: change.role, actor: caller.auditName))
                return AccessApproved(message: "\(change.email) is now \(change.role.rawValue) of \(appID).")
            })

        group.put("accounts/{email}") { request, context -> Response in
            let (appID, caller, _) = try await owner(of: request)
            let email = try person(context)
            let body = try await request.decode(as: RoleRequest.self, context: context)
            return try await approvals.handleAccess(
                .role, appID: appID, caller: caller, body: RoleChange(email: email, role: body.role), request: request, context: context)
        }

        group.delete("accounts/{email}") { request, context -> Done in
            let (appID, caller, _) = try await owner(of: request)
            let email = try person(context)
            // `revokeWhatTheyMade=true`: the keys (provisioning and backend), debug tokens and webhooks they made go with them.
            let revokeMade = request.uri.queryParameters.get("revokeWhatTheyMade") == "true"
            try Self.check(try await people.remove(email, from: appID, actor: caller.auditName, revokingWhatTheyMade: revokeMade))
            return Done(
                message: "\(email) is no longer a person of \(appID); their access to it ended now"
                    + (revokeMade ? ", and the keys, debug tokens and webhooks they made are revoked." : "."))
        }

        group.get("accounts/{email}/passkeys") { request, context -> PasskeysResponse in
            let (email, _) = try await managedPerson(request, context)
            return PasskeysResponse(email: email, passkeys: try await people.passkeys(of: email))
        }

        group.delete("accounts/{email}/passkeys/{credentialId}") { request, context -> Done in
            let (email, caller) = try await managedPerson(request, context)
            let credentialID = try DashboardAuthRoutes.bytes(context.parameters.get("credentialId") ?? "", field: "credentialId")
            try Self.check(try await people.revokePasskey(credentialID, of: email, actor: caller.auditName))
            return Done(message: "The passkey is revoked and every session of \(email) has ended.")
        }

        group.delete("accounts/{email}/sessions") { request, context -> Done in
            let (email, caller) = try await managedPerson(request, context)
            try Self.check(try await people.endSessions(of: email, actor: caller.auditName))
            return Done(message: "Every session of \(email) has ended.")
        }
    }

    /// The caller, who must be an owner of the app signed in to the dashboard.
    private func owner(of request: Request) async throws -> (appID: String, caller: Caller, accountID: UUID) {
        let (appID, caller) = try await authenticator.app(of: request)
        guard case .account(let accountID, _, _, let role) = caller else { throw AdminErrors.accountRequired }
        guard role == .owner else { throw AdminErrors.roleTooLow(role, required: .owner) }
        return (appID, caller, accountID)
    }

    /// The person of the app named in the path, whose passkeys and sessions the caller may manage:
    /// an owner of every app that person works on.
    private func managedPerson(_ request: Request, _ context: SesameRequestContext) async throws -> (email: String, caller: Caller) {
        let (appID, caller, accountID) = try await owner(of: request)
        let email = try person(context)
        guard try await people.apps(of: email).contains(appID) else { throw AdminErrors.accountNotFound }
        guard try await people.ownsEveryApp(of: email, caller: accountID) else { throw AdminErrors.personInOtherApps }
        return (email, caller)
    }

    private func person(_ context: SesameRequestContext) throws -> String {
        try Self.email(context.parameters.get("email")?.removingPercentEncoding ?? "")
    }

    /// `text` as Sesame keeps an email address: trimmed, lowercased.
    static func email(_ text: String) throws -> String {
        let email = text.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
        guard (3...254).contains(email.count), email.contains("@"), !email.contains(where: { $0.isWhitespace }) else {
            throw APIError.invalidField("email", "must be an email address")
        }
        return email
    }

    /// The refusal an outcome stands for.
    static func check(_ outcome: PeopleStore.Outcome) throws {
        switch outcome {
        case .done: return
        case .notMember: throw AdminErrors.accountNotFound
        case .lastOwner: throw AdminErrors.lastOwner
        case .lastPasskey: throw AdminErrors.lastPasskey
        case .passkeyNotFound: throw AdminErrors.passkeyNotFound
        }
    }

    /// The link: the token rides in the fragment, which browsers never send to a server or a referrer.
    static func inviteURL(origin: String?, token: String) -> String {
        (origin ?? "") + "/dashboard/#invite=" + token
    }
}

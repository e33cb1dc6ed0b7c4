import Foundation
import Hummingbird
import SesameDomain
import SesameHTTP

/// `accounts` (the app's people) and `accounts/invite`: the operator invites an app's first owner,
/// owners invite the rest. An invitation is a single-use link that expires in 72 hours.
struct AccountRoutes {
    let authenticator: AdminAuthenticator
    let accounts: AccountStore
    let dashboardOrigin: String?

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
        let message: String
    }

    struct MembersResponse: ResponseEncodable {
        let members: [Member]
    }

    func addRoutes(to group: RouterGroup<SesameRequestContext>) {
        group.get("accounts") { request, _ -> MembersResponse in
            let (appID, _) = try await authenticator.app(of: request)
            return MembersResponse(members: try await accounts.members(of: appID))
        }

        group.post("accounts/invite") { request, context -> InviteResponse in
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
                throw APIError(
                    .forbidden, code: "account_required",
                    message: "People are invited by the operator or by an owner signed in to the dashboard, not with a provisioning key.")
            }
            let email = body.email.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
            guard (3...254).contains(email.count), email.contains("@"), !email.contains(where: { $0.isWhitespace }) else {
                throw APIError.invalidField("email", "must be an email address")
            }
            let invitation = try await accounts.invite(appID: appID, email: email, role: body.role, invitedBy: caller.auditName)
            return InviteResponse(
                inviteURL: Self.inviteURL(origin: dashboardOrigin, token: invitation.token), email: email, role: body.role, appId: appID,
                expiresAt: invitation.expiresAt,
                message: "Send this link to \(email) only: it registers a passkey as \(body.role.rawValue) of \(appID), once, within 72 hours.")
        }
    }

    /// The link: the token rides in the fragment, which browsers never send to a server or a referrer.
    static func inviteURL(origin: String?, token: String) -> String {
        (origin ?? "") + "/dashboard/#invite=" + token
    }
}

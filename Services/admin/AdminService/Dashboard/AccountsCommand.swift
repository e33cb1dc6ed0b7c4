import ArgumentParser
import Foundation
import SesameConfiguration
import SesameDomain
import SesameServer

/// `sesame-admin accounts invite`, `invitations` and `cancel-invitation`: the operator invites an
/// app's first dashboard owner, lists the app's open invitations and cancels one (a link sent to
/// the wrong address), next to the database, no HTTP involved. Owners do the same on the People page.
struct AccountsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "accounts", abstract: "Dashboard accounts, managed next to the database.",
        subcommands: [Invite.self, Invitations.self, CancelInvitation.self])

    struct Invite: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Invite someone to an app's dashboard; prints the single-use link (valid 72 hours) once.")

        @Option(help: "The app, TEAMID.bundle.id (register it first with 'keys create').") var app: String
        @Option(help: "The invitee's email address.") var email: String
        @Option(help: "owner, editor or viewer.") var role = "owner"

        func run() async throws {
            guard let role = AccountRole(rawValue: role) else { throw ValidationError("--role is owner, editor or viewer") }
            let email = email.trimmingCharacters(in: .whitespaces).lowercased()
            guard email.contains("@") else { throw ValidationError("--email must be an email address") }
            let link = try await withOneShotDatabase(AdminService.self, task: "accounts-invite") { database, configuration, logger in
                let accounts = AccountStore(database: database, logger: logger)
                guard try await accounts.appExists(app) else { return String?.none }
                let invitation = try await accounts.invite(appID: app, email: email, role: role, invitedBy: "operator")
                return AccountRoutes.inviteURL(origin: configuration.dashboardOrigin, token: invitation.token)
            }
            guard let link else { throw ValidationError("no app \(app) is registered: create it with 'sesame-admin keys create' first") }
            print(link)
            FileHandle.standardError.write(Data("Send this link to \(email) only: it registers a passkey as \(role.rawValue) of \(app), once.\n".utf8))
        }
    }

    struct Invitations: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List an app's open invitations: who, as what, invited by whom, until when.")

        @Option(help: "The app, TEAMID.bundle.id.") var app: String

        func run() async throws {
            let invitations = try await withOneShotDatabase(AdminService.self, task: "accounts-invitations") { database, _, logger in
                try await AccountStore(database: database, logger: logger).openInvitations(of: app)
            }
            let formatter = ISO8601DateFormatter()
            print(["ID", "EMAIL", "ROLE", "INVITED BY", "EXPIRES", "WAITING FOR APPROVAL"].joined(separator: "\t"))
            for invitation in invitations {
                print(
                    [invitation.id.uuidString.lowercased(), invitation.email, invitation.role.rawValue, invitation.invitedBy,
                     formatter.string(from: invitation.expiresAt), invitation.pendingApproval == nil ? "no" : "yes"].joined(separator: "\t"))
            }
        }
    }

    struct CancelInvitation: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "cancel-invitation", abstract: "Cancel an open invitation: its link no longer opens (audited as account.invitation_cancel).")

        @Option(help: "The app, TEAMID.bundle.id.") var app: String
        @Argument(help: "The invitation's id, from 'accounts invitations'.") var id: String

        func run() async throws {
            guard let invitation = UUID(uuidString: id) else { throw ValidationError("\(id) is not an invitation id: see 'accounts invitations --app \(app)'") }
            let cancelled = try await withOneShotDatabase(AdminService.self, task: "accounts-cancel-invitation") { database, _, logger in
                try await AccountStore(database: database, logger: logger).cancelInvitation(invitation, of: app, actor: "operator")
            }
            guard cancelled else { throw ValidationError("\(app) has no open invitation \(id)") }
            print("The invitation is cancelled: its link no longer opens.")
        }
    }
}

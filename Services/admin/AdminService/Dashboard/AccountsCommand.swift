import ArgumentParser
import Foundation
import SesameConfiguration
import SesameDomain
import SesameServer

/// `sesame-admin accounts invite`: the operator invites an app's first dashboard owner, next to the
/// database, no HTTP involved.
struct AccountsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "accounts", abstract: "Dashboard accounts, managed next to the database.", subcommands: [Invite.self])

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
}

import ArgumentParser
import Foundation
import SesameConfiguration
import SesameDomain
import SesameServer

/// `sesame-admin keys create`: registers an app and creates its first provisioning key, run next to
/// the database (where the operator already holds its credentials), no HTTP involved.
struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys", abstract: "Provisioning keys, managed next to the database.", subcommands: [Create.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register an app (if new) and create a provisioning key for it; prints the key once.")

        @Option(help: "The app's 10-character Apple team id.") var teamId: String
        @Option(help: "The app's bundle id.") var bundleId: String
        @Option(help: "A name to recognise the key by, such as 'ci'.") var name = "unnamed"

        func run() async throws {
            let app: AppIdentifier
            do {
                app = try AppIdentifier(teamID: teamId, bundleID: bundleId)
            } catch {
                throw ValidationError(error.description)
            }
            let created = try await withOneShotDatabase(AdminService.self, task: "keys-create") { database, configuration, logger in
                let keys = ProvisioningKeyStore(
                    database: database, pathKey: AdminService.storageIDKey(masterKey: configuration.masterKey.current), logger: logger)
                return try await keys.create(for: app, name: name, caller: .operator, register: true)
            }
            guard let created else { throw ValidationError("the app could not be registered") }
            print(created.key)
            FileHandle.standardError.write(
                Data("Created key '\(created.summary.name)' for \(app). Save it now: Sesame keeps only its hash.\n".utf8))
        }
    }
}

import Foundation
import Logging
import PostgresNIO
import SesameDomain
import SesameStorage

/// A registered app, as auth needs it.
struct RegisteredApp: Sendable {
    let appID: String
    let policy: AppPolicy
}

/// Looks up registered apps (admin registers them when their first provisioning key is created).
struct AppDirectory: Sendable {
    let database: Database
    let policies: StoredPolicies
    let logger: Logger

    func app(appID: String) async throws -> RegisteredApp? {
        try await first(of: database.client.query("SELECT app_id, policy::text FROM apps WHERE app_id = \(appID)", logger: logger))
    }

    func app(teamID: String, bundleID: String) async throws -> RegisteredApp? {
        try await first(
            of: database.client.query(
                "SELECT app_id, policy::text FROM apps WHERE team_id = \(teamID) AND bundle_id = \(bundleID)", logger: logger))
    }

    private func first(of rows: PostgresRowSequence) async throws -> RegisteredApp? {
        for try await (appID, policy) in rows.decode((String, String).self) {
            return RegisteredApp(appID: appID, policy: try policies.policy(policy))
        }
        return nil
    }
}

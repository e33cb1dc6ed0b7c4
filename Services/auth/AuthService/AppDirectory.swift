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

    /// The app of an attest (prepared: every attest asks).
    func app(teamID: String, bundleID: String) async throws -> RegisteredApp? {
        for try await row in try await database.client.execute(AppByBundleStatement(teamID: teamID, bundleID: bundleID), logger: logger) {
            return try registered(row)
        }
        return nil
    }

    private func first(of rows: PostgresRowSequence) async throws -> RegisteredApp? {
        for try await row in rows.decode((String, String).self) { return try registered(row) }
        return nil
    }

    /// An app from its `app_id` and `policy::text` columns.
    private func registered(_ row: (appID: String, policy: String)) throws -> RegisteredApp {
        RegisteredApp(appID: row.appID, policy: try policies.policy(row.policy))
    }
}

/// `AppDirectory.app(teamID:bundleID:)`, prepared once per connection.
private struct AppByBundleStatement: PostgresPreparedStatement {
    static let sql = "SELECT app_id, policy::text FROM apps WHERE team_id = $1 AND bundle_id = $2"
    typealias Row = (String, String)

    let teamID: String
    let bundleID: String

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(teamID)
        bindings.append(bundleID)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}

import Foundation
import Logging
import PostgresNIO
import SesameDomain
import SesameJSON

/// Reads apps' kill switches and emergency revocations as `AccessRules`: delivery for every app,
/// admin's dry run and auth's refresh for one. One reader, so all three decide on the same rules.
public enum StoredAccessRules {
    /// What a read found.
    public struct Loaded: Sendable {
        /// The rules of each app that has any.
        public var rules: [String: AccessRules] = [:]
        /// The apps with a stored pattern that does not parse, with why. Ignoring such a rule would
        /// let a killed version or a revoked token through: their rules must not be used.
        public var failures: [String: String] = [:]

        public init() {}
    }

    /// The rules of `appID`. With `revocationsOnly`, the emergency revocations alone (auth's
    /// refresh applies nothing else, so it does not read the kill switches).
    public static func load(
        appID: String, revocationsOnly: Bool = false, from client: some PostgresConnectionSource, logger: Logger
    ) async throws -> Loaded {
        try await load(appIDs: [appID], revocationsOnly: revocationsOnly, from: client, logger: logger)
    }

    /// The rules of every app (`appIDs` nil), or of the apps in `appIDs`.
    public static func load(
        appIDs: [String]?, revocationsOnly: Bool = false, from client: some PostgresConnectionSource, logger: Logger
    ) async throws -> Loaded {
        var loaded = Loaded()
        if !revocationsOnly { try await readKillSwitches(appIDs: appIDs, into: &loaded, from: client, logger: logger) }
        try await readRevocations(appIDs: appIDs, into: &loaded, from: client, logger: logger)
        return loaded
    }

    private static func readKillSwitches(appIDs: [String]?, into loaded: inout Loaded, from client: some PostgresConnectionSource, logger: Logger) async throws {
        let kills = try await client.query(
            "SELECT app_id, version, reason FROM kill_switches WHERE \(appIDs)::text[] IS NULL OR app_id = ANY(\(appIDs)::text[])", logger: logger, file: #fileID, line: #line)
        for try await (app, version, reason) in kills.decode((String, String, String).self) {
            guard let pattern = try? VersionPattern(version) else {
                loaded.failures[app] = "kill switch pattern \(version) does not parse"
                continue
            }
            loaded.rules[app, default: AccessRules()].killSwitches.append(KillSwitch(pattern: pattern, reason: reason))
        }
    }

    /// An app's emergency revocations as one JSON array, for a statement that reads them with
    /// the rest of what it decides on (auth's refresh, in one round trip); `appID` is the SQL
    /// expression of the app's id. Read back with `revocations(json:appID:into:)`.
    public static func revocationsJSON(appID: String) -> String {
        """
        coalesce((SELECT json_agg(json_build_array(version_pattern, extract(epoch FROM issued_before), extract(epoch FROM \(refreshDeadline)))
            ORDER BY id) FROM revocations WHERE app_id = \(appID)), '[]')::text
        """
    }

    /// Reads what `revocationsJSON` selected into `loaded`, as `load` would have.
    public static func revocations(json: String, appID: String, into loaded: inout Loaded) {
        // What nearly every app has: nothing to decode.
        if json == "[]" { return }
        guard let entries = try? JSONDecoder().decode([[JSONValue]].self, from: Data(json.utf8)) else {
            loaded.failures[appID] = "revocations cannot be read"
            return
        }
        for entry in entries {
            guard entry.count == 3, case .string(let text) = entry[0], let issuedBefore = entry[1].doubleValue else {
                loaded.failures[appID] = "a revocation cannot be read"
                return
            }
            add(
                revocation: text, of: appID, issuedBefore: Date(timeIntervalSince1970: issuedBefore),
                refreshDeadline: entry[2].doubleValue.map { Date(timeIntervalSince1970: $0) }, to: &loaded)
        }
    }

    /// Adds one stored revocation to `loaded`, or marks its app failing when its pattern does not parse.
    private static func add(revocation text: String, of appID: String, issuedBefore: Date, refreshDeadline: Date?, to loaded: inout Loaded) {
        guard let pattern = try? VersionPattern(text) else {
            loaded.failures[appID] = "revocation pattern \(text) does not parse"
            return
        }
        loaded.rules[appID, default: AccessRules()].revocations.append(
            RevocationRule(pattern: pattern, issuedBefore: issuedBefore, refreshDeadline: refreshDeadline))
    }

    /// When a revocation stops letting a refresh through, if it sets a deadline (SQL, a timestamp or NULL).
    private static let refreshDeadline = "CASE WHEN force_refresh_ttl > 0 THEN created_at + make_interval(secs => force_refresh_ttl) END"

    private static func readRevocations(appIDs: [String]?, into loaded: inout Loaded, from client: some PostgresConnectionSource, logger: Logger) async throws {
        let revocations = try await client.query(
            """
            SELECT app_id, version_pattern, issued_before, \(unescaped: refreshDeadline)
            FROM revocations WHERE \(appIDs)::text[] IS NULL OR app_id = ANY(\(appIDs)::text[])
            """, logger: logger, file: #fileID, line: #line)
        for try await (app, version, issuedBefore, deadline) in revocations.decode((String, String, Date, Date?).self) {
            add(revocation: version, of: app, issuedBefore: issuedBefore, refreshDeadline: deadline, to: &loaded)
        }
    }
}

import Foundation
import Logging
import PostgresNIO
import SesameDomain

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
    }

    /// The rules of every app, or of `appID` only. With `revocationsOnly`, the emergency
    /// revocations alone (auth's refresh applies nothing else, so it does not read the kill switches).
    public static func load(
        appID: String? = nil, revocationsOnly: Bool = false, from client: PostgresClient, logger: Logger
    ) async throws -> Loaded {
        var loaded = Loaded()
        if !revocationsOnly { try await readKillSwitches(appID: appID, into: &loaded, from: client, logger: logger) }
        try await readRevocations(appID: appID, into: &loaded, from: client, logger: logger)
        return loaded
    }

    private static func readKillSwitches(appID: String?, into loaded: inout Loaded, from client: PostgresClient, logger: Logger) async throws {
        let kills = try await client.query(
            "SELECT app_id, version, reason FROM kill_switches WHERE \(appID)::text IS NULL OR app_id = \(appID)", logger: logger)
        for try await (app, version, reason) in kills.decode((String, String, String).self) {
            guard let pattern = try? VersionPattern(version) else {
                loaded.failures[app] = "kill switch pattern \(version) does not parse"
                continue
            }
            loaded.rules[app, default: AccessRules()].killSwitches.append(KillSwitch(pattern: pattern, reason: reason))
        }
    }

    private static func readRevocations(appID: String?, into loaded: inout Loaded, from client: PostgresClient, logger: Logger) async throws {
        let revocations = try await client.query(
            """
            SELECT app_id, version_pattern, issued_before, CASE WHEN force_refresh_ttl > 0
                THEN created_at + make_interval(secs => force_refresh_ttl) END
            FROM revocations WHERE \(appID)::text IS NULL OR app_id = \(appID)
            """, logger: logger)
        for try await (app, version, issuedBefore, deadline) in revocations.decode((String, String, Date, Date?).self) {
            guard let pattern = try? VersionPattern(version) else {
                loaded.failures[app] = "revocation pattern \(version) does not parse"
                continue
            }
            loaded.rules[app, default: AccessRules()].revocations.append(
                RevocationRule(pattern: pattern, issuedBefore: issuedBefore, refreshDeadline: deadline))
        }
    }
}

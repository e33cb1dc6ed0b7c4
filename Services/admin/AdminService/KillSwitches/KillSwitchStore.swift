import Foundation
import Logging
import PostgresNIO
import SesameDomain
import SesameJSON
import SesameStorage

/// A version that is switched off, and why.
typealias KilledVersion = Components.Schemas.KilledVersion

/// An emergency revocation, as listed.
typealias Revocation = Components.Schemas.Revocation

/// The two emergency brakes: kill switches (a version gets an error carrying the reason instead of
/// its config) and emergency revocations (tokens issued before now, for versions under a pattern,
/// stop working and those apps attest again).
struct KillSwitchStore: Sendable {
    let database: Database
    let logger: Logger

    /// Switches `versions` off with `reason` (`enabled` false) or back on; returns the versions
    /// whose state changed.
    func setKillSwitch(appID: String, versions: [String], enabled: Bool, reason: String?, caller: Caller) async throws -> [String] {
        try await database.client.withTransaction(logger: logger) { connection in
            var changed: [String] = []
            for version in versions {
                let rows =
                    enabled
                    ? try await connection.query(
                        "DELETE FROM kill_switches WHERE app_id = \(appID) AND version = \(version) RETURNING version", logger: logger)
                    : try await connection.query(
                        """
                        INSERT INTO kill_switches (app_id, version, reason, created_by_key) VALUES (\(appID), \(version), \(reason ?? ""), \(caller.keyID))
                        ON CONFLICT (app_id, version) DO UPDATE SET reason = EXCLUDED.reason, created_by_key = EXCLUDED.created_by_key,
                            created_at = now()
                        RETURNING version
                        """, logger: logger)
                for try await changedVersion in rows.decode(String.self) { changed.append(changedVersion) }
            }
            try await AuditLog.append(
                AuditEntry(
                    actor: caller.auditName, action: enabled ? .killSwitchClear : .killSwitchSet,
                    details: ["versions": .array(versions.map { .string($0) }), "reason": reason.map { .string($0) } ?? .null]),
                appID: appID, on: connection, logger: logger)
            return changed
        }
    }

    /// The versions switched off now.
    func killedVersions(appID: String) async throws -> [KilledVersion] {
        let rows = try await database.client.query(
            "SELECT version, reason, created_at FROM kill_switches WHERE app_id = \(appID) ORDER BY version", logger: logger)
        var killed: [KilledVersion] = []
        for try await (version, reason, createdAt) in rows.decode((String, String, Date).self) {
            killed.append(KilledVersion(version: version, reason: reason, createdAt: createdAt))
        }
        return killed
    }

    /// What a kill-switch proposal is made against: each of `versions` as it stands now (`on`, or
    /// `off: reason`), so that one approved after another changed them is stale.
    func standing(appID: String, versions: [String]) async throws -> String {
        let killed = Dictionary(try await killedVersions(appID: appID).map { ($0.version, $0.reason) }, uniquingKeysWith: { first, _ in first })
        return versions.sorted().map { version in killed[version].map { "\(version) off: \($0)" } ?? "\(version) on" }.joined(separator: "; ")
    }

    /// What an emergency revocation's proposal is made against: the newest revocation of `pattern`
    /// (its time), or `none`; one revoked again since is stale.
    func latestRevocation(appID: String, pattern: String) async throws -> String {
        let rows = try await database.client.query(
            """
            SELECT created_at FROM revocations WHERE app_id = \(appID) AND version_pattern = \(pattern)
            ORDER BY created_at DESC, id DESC LIMIT 1
            """, logger: logger)
        for try await createdAt in rows.decode(Date.self) { return "\(createdAt.timeIntervalSince1970)" }
        return "none"
    }

    /// The app's emergency revocations, newest first.
    func revocations(appID: String) async throws -> [Revocation] {
        let rows = try await database.client.query(
            """
            SELECT version_pattern, issued_before, force_refresh_ttl, created_at FROM revocations
            WHERE app_id = \(appID) ORDER BY created_at DESC, id DESC
            """, logger: logger)
        var revocations: [Revocation] = []
        for try await (pattern, issuedBefore, ttl, createdAt) in rows.decode((String, Date, Int, Date).self) {
            revocations.append(Revocation(versionPattern: pattern, issuedBefore: issuedBefore, forceRefreshTTL: ttl, createdAt: createdAt))
        }
        return revocations
    }

    /// Revokes every token of `appID` issued before now for versions under `pattern`; returns the
    /// cut-off time.
    func emergencyRevoke(appID: String, pattern: String, forceRefreshTTL: Int, caller: Caller) async throws -> Date {
        try await database.client.withTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                """
                INSERT INTO revocations (app_id, version_pattern, issued_before, force_refresh_ttl, created_by_key)
                VALUES (\(appID), \(pattern), now(), \(forceRefreshTTL), \(caller.keyID)) RETURNING issued_before
                """, logger: logger)
            var cutOff = Date()
            for try await issuedBefore in rows.decode(Date.self) { cutOff = issuedBefore }
            try await AuditLog.append(
                AuditEntry(
                    actor: caller.auditName, action: .emergencyRevoke, pattern: pattern,
                    details: ["forceRefreshTTL": .integer(Int64(forceRefreshTTL))]),
                appID: appID, on: connection, logger: logger)
            return cutOff
        }
    }
}

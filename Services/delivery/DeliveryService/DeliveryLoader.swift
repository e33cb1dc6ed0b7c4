import Foundation
import Logging
import PostgresNIO
import SesameDomain
import SesameEncryption
import SesameStorage

/// Reads delivery's state from PostgreSQL: the current revision of every pattern, kill switches
/// and emergency revocations. A config already held at the same revision is reused, so each
/// revision is decrypted once.
///
/// One app's bad row (a config sealed under a master key this instance lacks, a policy that no
/// longer decodes) fails that app only: the others load, and the failure is reported by app.
struct DeliveryLoader: Sendable {
    let database: Database
    let encryption: EnvelopeEncryption
    let logger: Logger

    /// What a load read.
    struct Loaded: Sendable {
        /// The apps that loaded; an app with nothing to serve and nothing switched off is absent.
        var states: [String: AppState] = [:]
        /// The apps that could not be loaded, with why.
        var failures: [String: String] = [:]
    }

    /// Every app's state (or only `only`'s). Throws only when PostgreSQL cannot be read at all.
    func loadAll(only: String? = nil, previous: [String: [String: ServedConfig]]) async throws -> Loaded {
        var states: [String: AppState] = [:]
        var failures: [String: String] = [:]
        let current = try await database.client.query(
            """
            SELECT app_id, pattern, revision, action, zero_knowledge FROM (
                SELECT DISTINCT ON (app_id, pattern) app_id, pattern, revision, action, zero_knowledge
                FROM config_revisions WHERE \(only)::text IS NULL OR app_id = \(only)
                ORDER BY app_id, pattern, revision DESC
            ) latest WHERE action <> 'delete'
            """, logger: logger)
        var wanted: [(appID: String, pattern: String, revision: Int64, zeroKnowledge: Bool)] = []
        for try await (appID, pattern, revision, _, zeroKnowledge) in current.decode((String, String, Int64, String, Bool).self) {
            if let held = previous[appID]?[pattern], held.revision == revision {
                states[appID, default: AppState()].configs[pattern] = held
            } else {
                wanted.append((appID, pattern, revision, zeroKnowledge))
            }
        }
        for item in wanted {
            let rows = try await database.client.query(
                """
                SELECT body FROM config_revisions
                WHERE app_id = \(item.appID) AND pattern = \(item.pattern) AND revision = \(item.revision)
                """, logger: logger)
            for try await sealed in rows.decode(Data.self) {
                do {
                    let body = try encryption.open(sealed, context: SealingContext.configBody(appID: item.appID, pattern: item.pattern))
                    states[item.appID, default: AppState()].configs[item.pattern] = ServedConfig(
                        pattern: item.pattern, revision: item.revision, body: body, zeroKnowledge: item.zeroKnowledge)
                } catch {
                    failures[item.appID] = "config \(item.pattern) revision \(item.revision) cannot be opened: \(error)"
                }
            }
        }

        let policies = try await database.client.query(
            "SELECT app_id, policy::text FROM apps WHERE \(only)::text IS NULL OR app_id = \(only)", logger: logger)
        for try await (appID, policy) in policies.decode((String, String).self) {
            do {
                states[appID, default: AppState()].policy = try AppPolicy(storedJSON: policy)
            } catch {
                failures[appID] = "policy cannot be read: \(error)"
            }
        }

        let kills = try await database.client.query(
            "SELECT app_id, version, reason FROM kill_switches WHERE \(only)::text IS NULL OR app_id = \(only)", logger: logger)
        for try await (appID, version, reason) in kills.decode((String, String, String).self) {
            // Ignoring a kill switch would let a killed version through: the app fails instead.
            guard let pattern = try? VersionPattern(version) else {
                failures[appID] = "kill switch pattern \(version) does not parse"
                continue
            }
            states[appID, default: AppState()].rules.killSwitches.append(KillSwitch(pattern: pattern, reason: reason))
        }

        let revocations = try await database.client.query(
            """
            SELECT app_id, version_pattern, issued_before, CASE WHEN force_refresh_ttl > 0
                THEN created_at + make_interval(secs => force_refresh_ttl) END
            FROM revocations WHERE \(only)::text IS NULL OR app_id = \(only)
            """, logger: logger)
        for try await (appID, version, issuedBefore, deadline) in revocations.decode((String, String, Date, Date?).self) {
            guard let pattern = try? VersionPattern(version) else {
                failures[appID] = "revocation pattern \(version) does not parse"
                continue
            }
            states[appID, default: AppState()].rules.revocations.append(
                RevocationRule(pattern: pattern, issuedBefore: issuedBefore, refreshDeadline: deadline))
        }
        // A half-loaded app would serve without a config or a rule it has: none of it is used.
        for appID in failures.keys { states[appID] = nil }
        return Loaded(states: states, failures: failures)
    }
}

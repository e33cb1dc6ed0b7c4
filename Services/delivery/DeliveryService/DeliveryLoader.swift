import CryptoExtras
import Foundation
import Logging
import PostgresNIO
import SesameDomain
import SesameEncryption
import SesamePinning
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
        var wanted: (appIDs: [String], patterns: [String], revisions: [Int64], zeroKnowledge: [Bool]) = ([], [], [], [])
        for try await (appID, pattern, revision, _, zeroKnowledge) in current.decode((String, String, Int64, String, Bool).self) {
            if let held = previous[appID]?[pattern], held.revision == revision {
                states[appID, default: AppState()].release.configs[pattern] = held
            } else {
                wanted.appIDs.append(appID)
                wanted.patterns.append(pattern)
                wanted.revisions.append(revision)
                wanted.zeroKnowledge.append(zeroKnowledge)
            }
        }
        if !wanted.appIDs.isEmpty {
            // Every changed body in one round trip, not one query each.
            let rows = try await database.client.query(
                """
                SELECT r.app_id, r.pattern, r.revision, r.body, w.zero_knowledge, r.tiers::text FROM config_revisions r
                JOIN unnest(\(wanted.appIDs)::text[], \(wanted.patterns)::text[], \(wanted.revisions)::bigint[], \(wanted.zeroKnowledge)::boolean[])
                    AS w(app_id, pattern, revision, zero_knowledge)
                    ON r.app_id = w.app_id AND r.pattern = w.pattern AND r.revision = w.revision
                """, logger: logger)
            for try await (appID, pattern, revision, sealed, zeroKnowledge, tiers) in rows.decode(
                (String, String, Int64, Data, Bool, String?).self)
            {
                do {
                    let body = try encryption.open(sealed, context: SealingContext.configBody(appID: appID, pattern: pattern))
                    states[appID, default: AppState()].release.configs[pattern] = ServedConfig(
                        pattern: pattern, revision: revision, body: body, zeroKnowledge: zeroKnowledge,
                        tiers: try tiers.map(ConfigTiers.init(storedJSON:)) ?? ConfigTiers())
                } catch {
                    failures[appID] = "config \(pattern) revision \(revision) cannot be opened: \(error)"
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

        // Access tokens live at most 24 hours (SESAME_ACCESS_TOKEN_TTL): older revocations have no
        // unexpired token left to refuse.
        let revokedDevices = try await database.client.query(
            """
            SELECT app_id, key_id FROM attested_keys
            WHERE revoked_at > now() - interval '25 hours' AND (\(only)::text IS NULL OR app_id = \(only))
            """, logger: logger)
        for try await (appID, keyID) in revokedDevices.decode((String, Data).self) {
            states[appID, default: AppState()].revokedDevices.insert(Base64.urlEncode(keyID))
        }

        try await loadPinRegistries(only: only, into: &states, failures: &failures)

        let rules = try await StoredAccessRules.load(appID: only, from: database.client, logger: logger)
        for (appID, appRules) in rules.rules { states[appID, default: AppState()].release.rules = appRules }
        failures.merge(rules.failures) { first, _ in first }
        // A half-loaded app would serve without a config or a rule it has: none of it is used.
        for appID in failures.keys { states[appID] = nil }
        return Loaded(states: states, failures: failures)
    }

    /// Each app's pins and active signing key, signed into the registry it serves.
    private func loadPinRegistries(only: String?, into states: inout [String: AppState], failures: inout [String: String]) async throws {
        var pins: [String: [Pin]] = [:]
        let pinRows = try await database.client.query(
            """
            SELECT app_id, domain_name, spki_sha256, fqdn, expire, created_at FROM pins
            WHERE \(only)::text IS NULL OR app_id = \(only) ORDER BY app_id, domain_name, created_at
            """, logger: logger)
        for try await (appID, domain, key, fqdn, expire, created) in pinRows.decode((String, String, String, String?, Int64?, Date).self) {
            pins[appID, default: []].append(
                Pin(domainName: domain, key: key, fqdn: fqdn, expire: expire, date: created.formatted(.iso8601)))
        }
        guard !pins.isEmpty else { return }
        let keyRows = try await database.client.query(
            """
            SELECT app_id, key_id, private_key_ciphertext FROM pin_signing_keys
            WHERE state = 'active' AND (\(only)::text IS NULL OR app_id = \(only))
            """, logger: logger)
        for try await (appID, keyID, sealed) in keyRows.decode((String, UUID, Data).self) {
            guard let appPins = pins[appID] else { continue }
            do {
                let der = try encryption.open(sealed, context: SealingContext.pinSigningKey(appID: appID, keyID: keyID))
                let key = try _RSA.Signing.PrivateKey(derRepresentation: der)
                states[appID, default: AppState()].pinRegistry = try ServedPinRegistry(pins: appPins, signingKey: key)
            } catch {
                failures[appID] = "pin signing key \(keyID) cannot be used: \(error)"
            }
        }
    }
}

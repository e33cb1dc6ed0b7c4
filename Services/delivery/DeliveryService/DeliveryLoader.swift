import CryptoExtras
import Foundation
import Logging
import PostgresNIO
import SesameDomain
import SesameEncryption
import SesamePinning
import SesameStorage

/// Reads delivery's state from PostgreSQL: the current revision of every pattern, kill switches
/// and emergency revocations, for every app or for the apps that changed. A config already held
/// at the same revision is reused, so each revision is decrypted once.
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
        /// How many rows PostgreSQL returned for it.
        var rowsRead = 0
    }

    /// Where PostgreSQL's history stands (`pg_snapshot_xmin`: every transaction before it has
    /// ended), and the apps changed by a transaction at or after `since` (none when nil). Read in
    /// one snapshot: a resync that loads these apps, then asks again from the watermark returned,
    /// misses no commit, however late it lands.
    func changes(since: Int64?) async throws -> (watermark: Int64, apps: [String]) {
        let rows = try await database.client.query(
            """
            SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint,
                ARRAY(SELECT app_id FROM app_changes WHERE changed_xid >= \(since)::text::xid8)
            """, logger: logger)
        for try await (watermark, apps) in rows.decode((Int64, [String]).self) { return (watermark, apps) }
        throw StorageError.unavailable  // a SELECT without FROM answers one row
    }

    /// Every app's state (`only` nil), or the states of the apps in `only`. Throws only when
    /// PostgreSQL cannot be read at all.
    func loadAll(only: [String]? = nil, previous: [String: [ServedConfig]]) async throws -> Loaded {
        var states: [String: AppState] = [:]
        var failures: [String: String] = [:]
        var rowsRead = 0
        var heads: [Revision] = []
        let current = try await database.client.query(
            """
            SELECT app_id, pattern, revision, zero_knowledge FROM config_heads
            WHERE action <> 'delete' AND (\(only)::text[] IS NULL OR app_id = ANY(\(only)::text[]))
            """, logger: logger)
        for try await (appID, pattern, revision, zeroKnowledge) in current.decode((String, String, Int64, Bool).self) {
            rowsRead += 1
            heads.append(Revision(appID: appID, pattern: pattern, revision: revision, zeroKnowledge: zeroKnowledge))
        }
        var wanted = heads
        let rollouts = try await StoredRollouts.inFlight(appIDs: only, from: database.client, logger: logger)
        rowsRead += rollouts.count
        for rollout in rollouts {
            guard let previousRevision = rollout.previousRevision, let zeroKnowledge = rollout.previousZeroKnowledge else { continue }
            wanted.append(Revision(appID: rollout.appID, pattern: rollout.pattern, revision: previousRevision, zeroKnowledge: zeroKnowledge))
        }
        let overrides = try await StoredOverrides.read(appIDs: only, from: database.client, logger: logger)
        rowsRead += overrides.count
        for pinned in overrides {
            wanted.append(Revision(appID: pinned.appID, pattern: pinned.pattern, revision: pinned.revision, zeroKnowledge: pinned.zeroKnowledge))
        }

        // A config held at the same revision is reused; every other body is read in one round trip.
        let held = Dictionary(
            previous.flatMap { appID, configs in configs.map { (Revision(appID: appID, pattern: $0.pattern, revision: $0.revision), $0) } },
            uniquingKeysWith: { first, _ in first })
        var served: [Revision: ServedConfig] = [:]
        var missing: [Revision] = []
        var asked = Set<Revision>()
        for revision in wanted where asked.insert(revision).inserted {
            if let config = held[revision] { served[revision] = config } else { missing.append(revision) }
        }
        if !missing.isEmpty {
            let rows = try await database.client.query(
                """
                SELECT r.app_id, r.pattern, r.revision, r.body, w.zero_knowledge, r.tiers::text FROM config_revisions r
                JOIN unnest(\(missing.map(\.appID))::text[], \(missing.map(\.pattern))::text[], \(missing.map(\.revision))::bigint[],
                            \(missing.map(\.zeroKnowledge))::boolean[])
                    AS w(app_id, pattern, revision, zero_knowledge)
                    ON r.app_id = w.app_id AND r.pattern = w.pattern AND r.revision = w.revision
                """, logger: logger)
            var sealed: [SealedConfig] = []
            for try await (appID, pattern, revision, body, zeroKnowledge, tiers) in rows.decode(
                (String, String, Int64, Data, Bool, String?).self)
            {
                rowsRead += 1
                sealed.append(SealedConfig(appID: appID, pattern: pattern, revision: revision, body: body, zeroKnowledge: zeroKnowledge, tiers: tiers))
            }
            for (stored, opened) in zip(sealed, await prepare(sealed)) {
                switch opened {
                case .success(let config): served[Revision(appID: stored.appID, pattern: stored.pattern, revision: stored.revision)] = config
                case .failure(let error): failures[stored.appID] = "config \(stored.pattern) revision \(stored.revision) cannot be opened: \(error)"
                }
            }
        }
        for revision in heads {
            // A head without a body (a row changed under the read) leaves the app failing, not served without it.
            guard let config = served[revision] else {
                failures[revision.appID] = failures[revision.appID] ?? "config \(revision.pattern) revision \(revision.revision) was not found"
                continue
            }
            states[revision.appID, default: AppState()].release.configs[revision.pattern] = config
        }
        for rollout in rollouts {
            // A rollout is of its pattern's newest revision; one left behind by a newer revision no longer decides.
            guard states[rollout.appID]?.release.configs[rollout.pattern]?.revision == rollout.revision else { continue }
            var previousConfig: ServedConfig?
            if let previousRevision = rollout.previousRevision {
                guard let config = served[Revision(appID: rollout.appID, pattern: rollout.pattern, revision: previousRevision)] else {
                    failures[rollout.appID] = failures[rollout.appID] ?? "rollout \(rollout.id): revision \(previousRevision) of \(rollout.pattern) was not found"
                    continue
                }
                previousConfig = config
            }
            states[rollout.appID]?.release.rollouts[rollout.pattern] = Rollout(
                id: rollout.id, appID: rollout.appID, basisPoints: rollout.basisPoints, salt: rollout.salt, paused: rollout.paused,
                previous: previousConfig)
        }
        for pinned in overrides {
            guard let config = served[Revision(appID: pinned.appID, pattern: pinned.pattern, revision: pinned.revision)] else {
                failures[pinned.appID] = failures[pinned.appID] ?? "device override: revision \(pinned.revision) of \(pinned.pattern) was not found"
                continue
            }
            states[pinned.appID, default: AppState()].release.overrides[pinned.pattern, default: [:]][pinned.install] = config
        }

        let policies = try await database.client.query(
            "SELECT app_id, policy::text FROM apps WHERE \(only)::text[] IS NULL OR app_id = ANY(\(only)::text[])", logger: logger)
        for try await (appID, policy) in policies.decode((String, String).self) {
            rowsRead += 1
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
            WHERE revoked_at > now() - interval '25 hours' AND (\(only)::text[] IS NULL OR app_id = ANY(\(only)::text[]))
            """, logger: logger)
        for try await (appID, keyID) in revokedDevices.decode((String, Data).self) {
            rowsRead += 1
            states[appID, default: AppState()].revokedDevices.insert(Base64.urlEncode(keyID))
        }
        // A revoked debug token's access tokens, by the subject they carry.
        let revokedDebugTokens = try await database.client.query(
            """
            SELECT app_id, token_id FROM debug_tokens
            WHERE revoked_at > now() - interval '25 hours' AND (\(only)::text[] IS NULL OR app_id = ANY(\(only)::text[]))
            """, logger: logger)
        for try await (appID, tokenID) in revokedDebugTokens.decode((String, UUID).self) {
            rowsRead += 1
            states[appID, default: AppState()].revokedDevices.insert(DebugTokenStore.tokenSubject(tokenID))
        }

        rowsRead += try await loadPinRegistries(only: only, into: &states, failures: &failures)
        rowsRead += try await loadRelays(only: only, into: &states)

        let rules = try await StoredAccessRules.load(appIDs: only, from: database.client, logger: logger)
        for (appID, appRules) in rules.rules {
            states[appID, default: AppState()].release.rules = appRules
            rowsRead += appRules.killSwitches.count + appRules.revocations.count
        }
        failures.merge(rules.failures) { first, _ in first }
        // A half-loaded app would serve without a config or a rule it has: none of it is used.
        for appID in failures.keys { states[appID] = nil }
        return Loaded(states: states, failures: failures, rowsRead: rowsRead)
    }

    /// One revision of one app's pattern.
    private struct Revision: Hashable {
        let appID: String
        let pattern: String
        let revision: Int64
        /// Carried to the body query; not part of the identity.
        var zeroKnowledge = false

        static func == (left: Revision, right: Revision) -> Bool {
            left.appID == right.appID && left.pattern == right.pattern && left.revision == right.revision
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(appID)
            hasher.combine(pattern)
            hasher.combine(revision)
        }
    }

    /// A published revision as stored.
    private struct SealedConfig: Sendable {
        let appID: String
        let pattern: String
        let revision: Int64
        let body: Data
        let zeroKnowledge: Bool
        let tiers: String?

        func open(with encryption: EnvelopeEncryption) -> Result<ServedConfig, any Error> {
            Result {
                let body = try encryption.open(body, context: SealingContext.configBody(appID: appID, pattern: pattern))
                return ServedConfig(
                    pattern: pattern, revision: revision, body: body, zeroKnowledge: zeroKnowledge,
                    tiers: try tiers.map(ConfigTiers.init(storedJSON:)) ?? ConfigTiers())
            }
        }
    }

    /// Opens and prepares configs (decrypt, parse, each tier's view) on every core: at the first
    /// load of thousands of apps, this is most of the time. A handful is done in line.
    private func prepare(_ sealed: [SealedConfig]) async -> [Result<ServedConfig, any Error>] {
        let encryption = encryption
        let workers = min(ProcessInfo.processInfo.activeProcessorCount, 16)
        guard sealed.count >= 64, workers > 1 else { return sealed.map { $0.open(with: encryption) } }
        let chunk = (sealed.count + workers - 1) / workers
        return await withTaskGroup(of: (Int, [Result<ServedConfig, any Error>]).self) { group in
            for start in stride(from: 0, to: sealed.count, by: chunk) {
                let slice = Array(sealed[start..<min(start + chunk, sealed.count)])
                group.addTask { (start, slice.map { $0.open(with: encryption) }) }
            }
            var results = [Result<ServedConfig, any Error>?](repeating: nil, count: sealed.count)
            for await (start, opened) in group {
                for (offset, result) in opened.enumerated() { results[start + offset] = result }
            }
            return results.map { $0! }
        }
    }

    /// Each app's relays, their injected headers opened. Returns the rows read.
    private func loadRelays(only: [String]?, into states: inout [String: AppState]) async throws -> Int {
        var rowsRead = 0
        let rows = try await database.client.query(
            """
            SELECT app_id, name, upstream, methods, paths, headers_ciphertext, least_tier, proof, max_request_bytes, max_response_bytes,
                   timeout_seconds, per_install_per_minute, per_install_per_day, per_app_per_day
            FROM relays WHERE \(only)::text[] IS NULL OR app_id = ANY(\(only)::text[])
            """, logger: logger)
        for try await row in rows {
            rowsRead += 1
            let columns = row.makeRandomAccess()
            let appID = try columns[0].decode(String.self)
            let name = try columns[1].decode(String.self)
            do {
                let rules = RelayRules(
                    upstream: try columns[2].decode(String.self), methods: try columns[3].decode([String].self),
                    paths: try columns[4].decode([String].self), leastTier: TrustTier(rawValue: try columns[6].decode(String.self)) ?? .attested,
                    proof: RelayProof(rawValue: try columns[7].decode(String.self)) ?? .assertion,
                    maxRequestBytes: try columns[8].decode(Int.self), maxResponseBytes: try columns[9].decode(Int.self),
                    timeoutSeconds: try columns[10].decode(Int.self), perInstallPerMinute: try columns[11].decode(Int?.self),
                    perInstallPerDay: try columns[12].decode(Int?.self), perAppPerDay: try columns[13].decode(Int?.self))
                let sealed = try columns[5].decode(Data.self)
                // Bound to the origin of the upstream as the row says now, never to what the row says
                // the headers were sealed for: a row moved elsewhere cannot open them.
                guard let upstream = RelayUpstream(rules.upstream) else { throw ServedRelay.Unusable(description: "relay \(name): its upstream is not a URL") }
                let opened = try encryption.open(sealed, context: SealingContext.relayHeaders(appID: appID, name: name, origin: upstream.origin))
                let headers = try JSONDecoder().decode([String: String].self, from: Data(opened))
                states[appID, default: AppState()].relays[name] = try ServedRelay(name: name, rules: rules, upstream: upstream, headers: headers)
            } catch {
                // Never the error's text alone: it must not carry a header value. The relay alone is
                // unusable; the app's configs are served as ever.
                logger.warning(
                    "a relay cannot be served: its headers do not open for its upstream, or its rules are not servable",
                    metadata: ["app": "\(appID)", "relay": "\(name)", "error": "\(type(of: error))"])
                states[appID, default: AppState()].unusableRelays[name] = "\(type(of: error))"
            }
        }
        return rowsRead
    }

    /// Each app's pins and active signing key, signed into the registry it serves. Returns the rows read.
    private func loadPinRegistries(only: [String]?, into states: inout [String: AppState], failures: inout [String: String]) async throws -> Int {
        var rowsRead = 0
        var pins: [String: [PinRegistry.Pin]] = [:]
        let pinRows = try await database.client.query(
            """
            SELECT app_id, domain_name, spki_sha256, fqdn, expire, created_at FROM pins
            WHERE \(only)::text[] IS NULL OR app_id = ANY(\(only)::text[]) ORDER BY app_id, domain_name, created_at
            """, logger: logger)
        for try await (appID, domain, key, fqdn, expire, created) in pinRows.decode((String, String, String, String?, Int64?, Date).self) {
            rowsRead += 1
            pins[appID, default: []].append(
                PinRegistry.Pin(domainName: domain, key: key, fqdn: fqdn, expire: expire, date: created.formatted(.iso8601)))
        }
        guard !pins.isEmpty else { return rowsRead }
        let keyRows = try await database.client.query(
            """
            SELECT k.app_id, k.key_id, k.private_key_ciphertext, a.pins_sequence FROM pin_signing_keys k JOIN apps a ON a.app_id = k.app_id
            WHERE k.state = 'active' AND (\(only)::text[] IS NULL OR k.app_id = ANY(\(only)::text[]))
            """, logger: logger)
        for try await (appID, keyID, sealed, sequence) in keyRows.decode((String, UUID, Data, Int64).self) {
            rowsRead += 1
            guard let appPins = pins[appID] else { continue }
            do {
                let der = try encryption.open(sealed, context: SealingContext.pinSigningKey(appID: appID, keyID: keyID))
                let key = try _RSA.Signing.PrivateKey(derRepresentation: der)
                states[appID, default: AppState()].pinRegistry = try ServedPinRegistry(pins: appPins, signingKey: key, sequence: sequence)
            } catch {
                failures[appID] = "pin signing key \(keyID) cannot be used: \(error)"
            }
        }
        return rowsRead
    }
}

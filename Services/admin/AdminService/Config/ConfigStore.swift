import Crypto
import Foundation
import Logging
import PostgresNIO
import SesameDomain
import SesameEncryption
import SesameJSON
import SesameStorage

/// A pattern's current state, as the manifest shows it (the document's `PatternState`).
typealias PatternState = Components.Schemas.PatternState

/// One revision, as the history shows it (the document's `RevisionInfo`).
typealias RevisionInfo = Components.Schemas.RevisionInfo

/// A revision's config, opened.
struct StoredConfig: Sendable {
    let revision: Int64
    let zeroKnowledge: Bool
    let tiers: ConfigTiers?
    let config: JSONValue
}

/// Config revisions: every upload, delete and rollback is a new row; nothing is overwritten. Each
/// mutation writes its audit entry in its transaction, where the database also appends the
/// `app.changed` event (migration 13).
struct ConfigStore: Sendable {
    let database: Database
    let encryption: EnvelopeEncryption
    /// Where uploads and schemas are checked against schemas.
    let validations: SchemaValidationPool
    let logger: Logger

    /// Publishes `body` (JSON bytes) as the next revision of `pattern`, to every install or, with
    /// `rolloutBasisPoints`, to that share of them as a staged rollout; returns the revision, the
    /// rollout begun, and the live patterns as that transaction left them (not as a later read
    /// might see them). Refused while a rollout of the pattern is in flight.
    func upload(
        appID: String, pattern: String, body: [UInt8], zeroKnowledge: Bool, tiers: ConfigTiers?, rolloutBasisPoints: Int? = nil,
        validating config: JSONValue? = nil, caller: Caller
    ) async throws -> (revision: Int64, rollout: StoredRollout?, livePatterns: [String]) {
        let sealed = Data(try encryption.seal(body, context: SealingContext.configBody(appID: appID, pattern: pattern)))
        let tiersJSON = try tiers?.storedJSON()
        let digest = Data(SHA256.hash(data: body))
        var checkedSchemas: [AttachedSchema]?
        if let config { checkedSchemas = try await refuseUnlessValid(config, appID: appID, pattern: pattern) }
        return try await database.client.withRefusingTransaction(logger: logger) { connection in
            let revision = try await nextRevision(appID: appID, pattern: pattern, on: connection)
            try await refuseWhileRolling(appID: appID, pattern: pattern, on: connection)
            if let config, let checkedSchemas {
                try await refuseUnlessStillValid(config, checked: checkedSchemas, appID: appID, pattern: pattern, on: connection)
            }
            let previous = try await liveRevision(appID: appID, pattern: pattern, on: connection)
            try ProposalBase.check(previous.map(String.init) ?? "none")
            try await connection.query(
                """
                INSERT INTO config_revisions
                    (app_id, pattern, revision, action, body, zero_knowledge, size_bytes, body_sha256, created_by_key, tiers)
                VALUES (
                    \(appID), \(pattern), \(revision), 'upload', \(sealed), \(zeroKnowledge), \(body.count), \(digest), \(caller.keyID),
                    \(tiersJSON)::jsonb)
                """, logger: logger)
            try await AuditLog.append(
                AuditEntry(
                    actor: caller.auditName, action: .configUpload, pattern: pattern, revision: revision,
                    details: [
                        "sizeBytes": .integer(Int64(body.count)), "zeroKnowledge": .bool(zeroKnowledge),
                        "tiers": tiers.map { .object($0.required.mapValues { .string($0.rawValue) }) } ?? .null,
                    ]),
                appID: appID, on: connection, logger: logger)
            var rollout: StoredRollout?
            if let rolloutBasisPoints {
                rollout = try await beginRollout(
                    appID: appID, pattern: pattern, revision: revision, previous: previous, basisPoints: rolloutBasisPoints, caller: caller,
                    on: connection)
            }
            return (revision, rollout, try await livePatterns(appID: appID, on: connection).map(\.pattern))
        }
    }

    /// The config of `revision` of `pattern`, or what the pattern publishes now when `revision` is
    /// nil; nil when there is no such revision or it holds no body (a delete).
    func stored(appID: String, pattern: String, revision: Int64?) async throws -> StoredConfig? {
        let rows = try await database.client.query(
            """
            SELECT revision, body, zero_knowledge, tiers::text FROM config_revisions
            WHERE app_id = \(appID) AND pattern = \(pattern) AND (\(revision)::bigint IS NULL OR revision = \(revision))
            ORDER BY revision DESC LIMIT 1
            """, logger: logger)
        for try await (found, sealed, zeroKnowledge, tiers) in rows.decode((Int64, Data?, Bool, String?).self) {
            guard let sealed else { return nil }
            let body = try encryption.open(sealed, context: SealingContext.configBody(appID: appID, pattern: pattern))
            return StoredConfig(
                revision: found, zeroKnowledge: zeroKnowledge,
                tiers: try tiers.map(ConfigTiers.init(storedJSON:)),
                config: try JSONDecoder().decode(JSONValue.self, from: Data(body)))
        }
        return nil
    }

    /// Records that `caller` read the secret values of `revisions` of `pattern` (`config.read`),
    /// before they are shown: a read the audit log cannot record is not answered.
    func recordRead(appID: String, pattern: String, revisions: [Int64], via: String, caller: Caller) async throws {
        try await database.client.withTransaction(logger: logger) { connection in
            try await AuditLog.append(
                AuditEntry(
                    actor: caller.auditName, action: .configRead, pattern: pattern, revision: revisions.last,
                    details: ["via": .string(via), "revisions": .array(revisions.map { .integer($0) })]),
                appID: appID, on: connection, logger: logger)
        }
    }

    /// Publishes the body of an earlier `revision` of `pattern` as its next revision; nil when that
    /// revision does not exist or holds no body (a delete).
    func rollback(appID: String, pattern: String, to revision: Int64, caller: Caller) async throws -> Int64? {
        try await database.client.withRefusingTransaction(logger: logger) { connection in
            let next = try await nextRevision(appID: appID, pattern: pattern, on: connection)
            try await refuseWhileRolling(appID: appID, pattern: pattern, on: connection)
            try ProposalBase.check(try await liveRevision(appID: appID, pattern: pattern, on: connection).map(String.init) ?? "none")
            let rows = try await connection.query(
                """
                INSERT INTO config_revisions
                    (app_id, pattern, revision, action, body, zero_knowledge, size_bytes, body_sha256, restored_from, created_by_key, tiers)
                SELECT app_id, pattern, \(next), 'rollback', body, zero_knowledge, size_bytes, body_sha256, revision, \(caller.keyID), tiers
                FROM config_revisions
                WHERE app_id = \(appID) AND pattern = \(pattern) AND revision = \(revision) AND body IS NOT NULL
                RETURNING zero_knowledge
                """, logger: logger)
            var restored = false
            for try await _ in rows.decode(Bool.self) { restored = true }
            guard restored else { return nil }
            try await AuditLog.append(
                AuditEntry(actor: caller.auditName, action: .configRollback, pattern: pattern, revision: next, details: ["restoredFrom": .integer(revision)]),
                appID: appID, on: connection, logger: logger)
            return next
        }
    }

    /// Deletes `pattern` (every pattern when nil) by recording a delete revision; returns the
    /// patterns deleted (none when nothing was published there).
    func delete(appID: String, pattern: String?, caller: Caller) async throws -> [String] {
        try await database.client.withRefusingTransaction(logger: logger) { connection in
            let live = try await livePatterns(appID: appID, on: connection).map(\.pattern).filter { pattern == nil || $0 == pattern }
            for target in live {
                let revision = try await nextRevision(appID: appID, pattern: target, on: connection)
                try await refuseWhileRolling(appID: appID, pattern: target, on: connection)
                try await connection.query(
                    """
                    INSERT INTO config_revisions (app_id, pattern, revision, action, created_by_key)
                    VALUES (\(appID), \(target), \(revision), 'delete', \(caller.keyID))
                    """, logger: logger)
                // An override outliving its pattern would keep serving the deleted config to its install.
                let dropped = try await connection.query(
                    "WITH gone AS (DELETE FROM config_overrides WHERE app_id = \(appID) AND pattern = \(target) RETURNING 1) SELECT count(*) FROM gone",
                    logger: logger)
                var overridesRemoved = 0
                for try await count in dropped.decode(Int.self) { overridesRemoved = count }
                try await AuditLog.append(
                    AuditEntry(
                        actor: caller.auditName, action: .configDelete, pattern: target, revision: revision,
                        details: overridesRemoved > 0 ? ["overridesRemoved": .integer(Int64(overridesRemoved))] : [:]),
                    appID: appID, on: connection, logger: logger)
            }
            return live
        }
    }

    /// The patterns with a published config, and their current revisions.
    func manifest(appID: String) async throws -> [PatternState] {
        try await database.client.withConnection { connection in try await livePatterns(appID: appID, on: connection) }
    }

    /// What the app has released, as delivery decides on it (`AppRelease.resolve`): the live
    /// patterns with the kill switches, emergency revocations and rollouts in flight.
    func release(appID: String) async throws -> AppRelease<PatternState> {
        let (live, rollouts) = try await database.client.withConnection { connection in
            let live = try await livePatterns(appID: appID, on: connection)
            var rollouts: [String: Rollout<PatternState>] = [:]
            for stored in try await StoredRollouts.read(appIDs: [appID], pattern: nil, inFlightOnly: true, on: connection, logger: logger) {
                var previous: PatternState?
                if let revision = stored.previousRevision {
                    previous = try await revisionStates(appID: appID, pattern: stored.pattern, revision: revision, on: connection).first
                }
                rollouts[stored.pattern] = Rollout(
                    id: stored.id, appID: appID, basisPoints: stored.basisPoints, salt: stored.salt, paused: stored.paused, previous: previous)
            }
            return (live, rollouts)
        }
        var overrides: [String: [String: PatternState]] = [:]
        for pinned in try await StoredOverrides.read(appIDs: [appID], from: database.client, logger: logger) {
            overrides[pinned.pattern, default: [:]][pinned.install] = PatternState(
                pattern: pinned.pattern, revision: pinned.revision, sizeBytes: 0, zeroKnowledge: pinned.zeroKnowledge, updatedAt: pinned.createdAt,
                updatedBy: nil, tiers: nil)
        }
        let stored = try await StoredAccessRules.load(appID: appID, from: database.client, logger: logger)
        if let failure = stored.failures[appID] { throw AdminErrors.storedRuleUnreadable(failure) }
        return AppRelease(
            configs: Dictionary(live.map { ($0.pattern, $0) }, uniquingKeysWith: { first, _ in first }),
            rules: stored.rules[appID] ?? AccessRules(), rollouts: rollouts, overrides: overrides)
    }

    /// Every revision of `pattern` (of every pattern when nil), newest first.
    func history(appID: String, pattern: String?) async throws -> [RevisionInfo] {
        let rows = try await database.client.query(
            """
            SELECT r.pattern, r.revision, r.action, r.size_bytes, r.body_sha256, r.zero_knowledge, r.restored_from, r.created_at,
                   k.name || ' (' || k.key_hint || ')'
            FROM config_revisions r LEFT JOIN provisioning_keys k ON k.key_id = r.created_by_key
            WHERE r.app_id = \(appID) AND (\(pattern)::text IS NULL OR r.pattern = \(pattern))
            ORDER BY r.pattern, r.revision DESC
            """, logger: logger)
        var revisions: [RevisionInfo] = []
        for try await (pattern, revision, action, size, digest, zeroKnowledge, restoredFrom, createdAt, createdBy) in rows.decode(
            (String, Int64, String, Int, Data?, Bool, Int64?, Date, String?).self)
        {
            revisions.append(
                RevisionInfo(
                    pattern: pattern, revision: revision, action: action, sizeBytes: size,
                    sha256: digest.map { Hex.encode($0) }, zeroKnowledge: zeroKnowledge,
                    restoredFrom: restoredFrom, createdAt: createdAt, createdBy: createdBy))
        }
        return revisions
    }

    func livePatterns(appID: String, on connection: PostgresConnection) async throws -> [PatternState] {
        try await revisionStates(appID: appID, pattern: nil, revision: nil, on: connection)
    }

    /// The state of each pattern's newest revision when `revision` is nil (the live patterns:
    /// deletes left out), or of `revision` of `pattern`.
    private func revisionStates(appID: String, pattern: String?, revision: Int64?, on connection: PostgresConnection) async throws -> [PatternState] {
        let rows = try await connection.query(
            """
            SELECT latest.pattern, latest.revision, latest.size_bytes, latest.zero_knowledge, latest.created_at,
                   k.name || ' (' || k.key_hint || ')', latest.tiers::text
            FROM (
                SELECT DISTINCT ON (pattern) pattern, revision, action, size_bytes, zero_knowledge, created_at, created_by_key, tiers
                FROM config_revisions
                WHERE app_id = \(appID) AND (\(pattern)::text IS NULL OR pattern = \(pattern)) AND (\(revision)::bigint IS NULL OR revision = \(revision))
                ORDER BY pattern, revision DESC
            ) latest
            LEFT JOIN provisioning_keys k ON k.key_id = latest.created_by_key
            WHERE latest.action <> 'delete' ORDER BY latest.pattern
            """, logger: logger)
        var states: [PatternState] = []
        for try await (pattern, revision, size, zeroKnowledge, updatedAt, updatedBy, tiers) in rows.decode(
            (String, Int64, Int, Bool, Date, String?, String?).self)
        {
            states.append(
                PatternState(
                    pattern: pattern, revision: revision, sizeBytes: size, zeroKnowledge: zeroKnowledge, updatedAt: updatedAt,
                    updatedBy: updatedBy, tiers: try tiers.map(ConfigTiers.init(storedJSON:))))
        }
        return states
    }

    /// The next revision of `pattern`, holding a lock on it until the transaction ends, so
    /// concurrent uploads get distinct, increasing revisions.
    func nextRevision(appID: String, pattern: String, on connection: PostgresConnection) async throws -> Int64 {
        try await lock(appID: appID, pattern: pattern, on: connection)
        let rows = try await connection.query(
            "SELECT COALESCE(MAX(revision), 0) + 1 FROM config_revisions WHERE app_id = \(appID) AND pattern = \(pattern)", logger: logger)
        for try await next in rows.decode(Int64.self) { return next }
        return 1
    }

    /// Holds `pattern`'s lock until the transaction ends: its revisions and its rollout change one writer at a time.
    func lock(appID: String, pattern: String, on connection: PostgresConnection) async throws {
        let lockKey = "config:\(appID):\(pattern)"
        try await connection.query("SELECT pg_advisory_xact_lock(hashtextextended(\(lockKey), 0))", logger: logger)
    }

    /// The revision `pattern` serves now, read on its own; nil when it serves nothing.
    func liveRevision(appID: String, pattern: String) async throws -> Int64? {
        try await database.client.withConnection { connection in try await liveRevision(appID: appID, pattern: pattern, on: connection) }
    }

    /// The revision `pattern` serves now; nil when it serves nothing (never published, or deleted).
    func liveRevision(appID: String, pattern: String, on connection: PostgresConnection) async throws -> Int64? {
        let rows = try await connection.query(
            "SELECT revision FROM config_heads WHERE app_id = \(appID) AND pattern = \(pattern) AND action <> 'delete'", logger: logger)
        for try await revision in rows.decode(Int64.self) { return revision }
        return nil
    }
}


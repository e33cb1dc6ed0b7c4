import Foundation
import PostgresNIO
import SesameDomain
import SesameHTTP
import SesameJSON
import SesameStorage

/// What can be done to a rollout in flight.
enum RolloutAction: String, Codable, Sendable, CaseIterable {
    /// More installs get the revision (the ones that have it keep it).
    case widen
    /// Every install gets the previous config until `resume`.
    case pause
    /// The installs in the rollout get its revision again.
    case resume
    /// Every install gets the revision; the rollout ends.
    case complete
    /// Every install gets the previous config again, published as a new revision; the rollout ends.
    case rollback
}

extension RolloutAction {
    /// What the audit log records for this step.
    var auditAction: AuditAction {
        switch self {
        case .widen: .configRolloutWiden
        case .pause: .configRolloutPause
        case .resume: .configRolloutResume
        case .complete: .configRolloutComplete
        case .rollback: .configRolloutRollback
        }
    }
}

/// Staged rollouts: begun by an upload, then widened, paused, resumed, completed or rolled back,
/// each step under the pattern's lock, audited, in one transaction (delivery learns of it through
/// the `app_changes` trigger, like any change it serves).
extension ConfigStore {
    /// Begins a rollout of `revision` (just inserted) in the upload's transaction.
    func beginRollout(
        appID: String, pattern: String, revision: Int64, previous: Int64?, basisPoints: Int, caller: Caller, on connection: PostgresConnection
    ) async throws -> StoredRollout {
        let id = UUID()
        let salt = Hex.encode((0..<16).map { _ in UInt8.random(in: 0...255) })
        try await connection.query(
            """
            INSERT INTO config_rollouts (rollout_id, app_id, pattern, revision, previous_revision, basis_points, salt, state)
            VALUES (\(id), \(appID), \(pattern), \(revision), \(previous), \(basisPoints), \(salt), 'active')
            """, logger: logger)
        try await AuditLog.append(
            AuditEntry(
                actor: caller.auditName, action: .configRolloutStart, pattern: pattern, revision: revision,
                details: [
                    "rollout": .string(id.uuidString.lowercased()), "percent": .number(RolloutBucket.percent(basisPoints: basisPoints)),
                    "previousRevision": previous.map { .integer($0) } ?? .null,
                ]),
            appID: appID, on: connection, logger: logger)
        // Read back in this transaction, right after the insert: never absent, but not a crash if it were.
        guard let begun = try await rollout(appID: appID, pattern: pattern, on: connection) else { throw APIError.internalError }
        return begun
    }

    /// Applies `action` to `pattern`'s rollout in flight (`basisPoints` for `widen`); returns the
    /// rollout as it is left, and the revision a rollback published.
    func changeRollout(
        appID: String, pattern: String, action: RolloutAction, basisPoints: Int?, caller: Caller
    ) async throws -> (rollout: StoredRollout, restoredAs: Int64?) {
        try await database.client.withRefusingTransaction(logger: logger) { connection in
            try await lock(appID: appID, pattern: pattern, on: connection)
            guard let current = try await rollout(appID: appID, pattern: pattern, on: connection) else {
                throw AdminErrors.noRolloutInFlight(pattern)
            }
            var details: [String: JSONValue] = ["rollout": .string(current.id.uuidString.lowercased())]
            var restoredAs: Int64?
            switch action {
            case .widen:
                guard let basisPoints else { throw APIError.invalidField("percent", "is required to widen a rollout") }
                guard basisPoints > current.basisPoints else { throw AdminErrors.rolloutNotWider(current: current.basisPoints) }
                try await update(current, basisPoints: basisPoints, state: current.state, on: connection)
                details["from"] = .number(RolloutBucket.percent(basisPoints: current.basisPoints))
                details["percent"] = .number(RolloutBucket.percent(basisPoints: basisPoints))
            case .pause:
                guard !current.paused else { throw AdminErrors.rolloutAlready("paused") }
                try await update(current, state: "paused", on: connection)
            case .resume:
                guard current.paused else { throw AdminErrors.rolloutAlready("running") }
                try await update(current, state: "active", on: connection)
            case .complete:
                try await update(current, basisPoints: RolloutBucket.count, state: "completed", on: connection)
            case .rollback:
                try await update(current, state: "rolled_back", on: connection)
                restoredAs = try await restorePrevious(of: current, caller: caller, on: connection)
                details["restoredAs"] = restoredAs.map { .integer($0) } ?? .null
            }
            try await AuditLog.append(
                AuditEntry(actor: caller.auditName, action: action.auditAction, pattern: pattern, revision: current.revision, details: details),
                appID: appID, on: connection, logger: logger)
            let left = try await StoredRollouts.read(appIDs: [appID], pattern: pattern, inFlightOnly: false, on: connection, logger: logger)
            return (left.first { $0.id == current.id } ?? current, restoredAs)
        }
    }

    /// The app's rollouts (of `pattern` only when given), newest first, each with how many
    /// distinct installs got its revision and the previous one (every replica's sketches merged).
    func rollouts(appID: String, pattern: String?) async throws -> [(rollout: StoredRollout, installs: RolloutInstalls)] {
        try await database.client.withConnection { connection in
            let rollouts = try await StoredRollouts.read(appIDs: [appID], pattern: pattern, inFlightOnly: false, on: connection, logger: logger)
            let rows = try await connection.query(
                "SELECT rollout_id, included, registers FROM rollout_installs WHERE rollout_id = ANY(\(rollouts.map(\.id)))", logger: logger)
            var sketches: [UUID: (included: DistinctCount, excluded: DistinctCount)] = [:]
            for try await (id, included, registers) in rows.decode((UUID, Bool, Data).self) {
                // A sketch that does not read back is left out of the count rather than failing the list.
                guard let sketch = DistinctCount(registers: Array(registers)) else { continue }
                var both = sketches[id] ?? (DistinctCount(), DistinctCount())
                if included { both.included.merge(sketch) } else { both.excluded.merge(sketch) }
                sketches[id] = both
            }
            return rollouts.map { rollout in
                let both = sketches[rollout.id]
                return (rollout, RolloutInstalls(included: both?.included.estimate ?? 0, excluded: both?.excluded.estimate ?? 0))
            }
        }
    }

    /// Refuses a change of `pattern`'s revisions while a rollout of it is in flight: the rollout's
    /// two revisions are what installs get until it completes or is rolled back.
    func refuseWhileRolling(appID: String, pattern: String, on connection: PostgresConnection) async throws {
        if try await rollout(appID: appID, pattern: pattern, on: connection) != nil { throw AdminErrors.rolloutInFlight(pattern) }
    }

    /// `pattern`'s rollout in flight, if any.
    private func rollout(appID: String, pattern: String, on connection: PostgresConnection) async throws -> StoredRollout? {
        try await StoredRollouts.read(appIDs: [appID], pattern: pattern, inFlightOnly: true, on: connection, logger: logger).first
    }

    private func update(_ rollout: StoredRollout, basisPoints: Int? = nil, state: String, on connection: PostgresConnection) async throws {
        try await connection.query(
            """
            UPDATE config_rollouts SET basis_points = \(basisPoints ?? rollout.basisPoints), state = \(state), updated_at = now()
            WHERE rollout_id = \(rollout.id)
            """, logger: logger)
    }

    /// Publishes the rollout's previous config again as the pattern's next revision, or deletes the
    /// pattern when it served nothing before; the new revision.
    private func restorePrevious(of rollout: StoredRollout, caller: Caller, on connection: PostgresConnection) async throws -> Int64 {
        let next = try await nextRevision(appID: rollout.appID, pattern: rollout.pattern, on: connection)
        if let previous = rollout.previousRevision {
            try await connection.query(
                """
                INSERT INTO config_revisions
                    (app_id, pattern, revision, action, body, zero_knowledge, size_bytes, body_sha256, restored_from, created_by_key, tiers)
                SELECT app_id, pattern, \(next), 'rollback', body, zero_knowledge, size_bytes, body_sha256, revision, \(caller.keyID), tiers
                FROM config_revisions WHERE app_id = \(rollout.appID) AND pattern = \(rollout.pattern) AND revision = \(previous)
                """, logger: logger)
        } else {
            try await connection.query(
                """
                INSERT INTO config_revisions (app_id, pattern, revision, action, created_by_key)
                VALUES (\(rollout.appID), \(rollout.pattern), \(next), 'delete', \(caller.keyID))
                """, logger: logger)
        }
        return next
    }
}

import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import SesameDomain
import SesameStorage
import Synchronization

/// How many distinct installs each side of each rollout in flight reached on this replica: a
/// `DistinctCount` per rollout and side, fed by every answer a rollout decided (the install's
/// mark, hashed already by the decision), written to PostgreSQL every `interval` for admin to
/// merge across replicas. Memory is bounded by the rollouts in flight (4 KiB a side): a rollout
/// that ends is written one last time and forgotten.
final class RolloutInstallCounts: Service, Sendable {
    private struct Side: Hashable {
        let appID: String
        let rollout: String
        let included: Bool
    }

    private struct Tally {
        var count = DistinctCount()
        var unsaved = false
    }

    private let tallies = Mutex<[Side: Tally]>([:])
    /// This process's sketches, apart from every other replica's (and its own before a restart).
    private let replica = UUID()
    private let database: Database
    private let cache: DeliveryCache
    private let interval: Duration
    private let logger: Logger

    init(database: Database, cache: DeliveryCache, interval: Duration, logger: Logger) {
        self.database = database
        self.cache = cache
        self.interval = interval
        self.logger = logger
    }

    /// Counts the install behind `mark` on its side of `appID`'s `rollout`. Does not wait.
    func record(appID: String, rollout: String, included: Bool, mark: UInt64) {
        let side = Side(appID: appID, rollout: rollout, included: included)
        tallies.withLock { tallies in
            // In place: the sketch is 4 KiB, and copying it per answer would cost more than the answer.
            if tallies[side, default: Tally()].count.insert(hash: mark) {
                tallies[side]?.unsaved = true
            }
        }
    }

    func run() async throws {
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            try? await cancelWhenGracefulShutdown { [interval] in try await Task.sleep(for: interval) }
            do {
                try await withTimeout(.seconds(30)) { try await self.save() }
            } catch {
                // Counted again into the same sketches and written at the next turn: nothing is lost.
                logger.warning("rollout install counts not saved; will retry", metadata: ["error": "\(String(reflecting: error))"])
            }
        }
    }

    /// Writes the sketches changed since the last write; forgets those of rollouts no longer in
    /// flight. Its work grows with the rollouts this replica counted, not with every app's.
    func save() async throws {
        let (sides, unsaved) = tallies.withLock { tallies in
            (Array(tallies.keys), tallies.compactMap { side, tally in tally.unsaved ? (side, tally.count) : nil })
        }
        guard !sides.isEmpty else { return }
        let ended = Set(sides.filter { !cache.rolloutInFlight(id: $0.rollout, appID: $0.appID) })
        for (side, count) in unsaved {
            guard let rollout = UUID(uuidString: side.rollout) else { continue }
            try await database.client.query(
                """
                INSERT INTO rollout_installs (rollout_id, included, replica, registers) VALUES (\(rollout), \(side.included), \(replica), \(Data(count.registers)))
                ON CONFLICT (rollout_id, included, replica) DO UPDATE SET registers = EXCLUDED.registers, updated_at = now()
                """, logger: logger)
            DeliveryMetrics.rolloutInstalls(count.estimate, rollout: side.rollout, included: side.included)
            tallies.withLock { tallies in
                // Counted meanwhile: still unsaved.
                if tallies[side]?.count == count { tallies[side]?.unsaved = false }
            }
        }
        tallies.withLock { tallies in tallies = tallies.filter { !ended.contains($0.key) || $0.value.unsaved } }
    }
}

import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import SesameDomain
import SesameStorage
import Synchronization

/// A relay's quotas (per install per minute and per day, per app per day), held across replicas.
///
/// A window new to a replica starts **reserved**: before its first sync the replica admits only
/// calls it has already added to `relay_usage`, a share at a time (an eighth of the quota, at least
/// one call: `reservationShare`), each share granted only as far as every replica's sum leaves room.
/// So replicas meeting a new window at once admit no more than its quota between them. At its first
/// sync the replica gives back what it reserved and did not use, and the window is **synced**: a
/// call is admitted while the calls every replica had counted at this replica's last sync, plus
/// those it admitted since, stay under the quota; about once a `syncInterval` it adds what it
/// admitted to `relay_usage` and reads back the sums of every window it used in the last minute.
/// **Tolerance**: a synced window may exceed its quota by the calls the *other* replicas admitted
/// for it since this replica's last sync (one interval, 1 s by default); a reservation not yet given
/// back may refuse others up to one share early for as long. If PostgreSQL is away, each replica
/// keeps counting alone and adds its counts when it returns: nothing is lost, and the tolerance
/// widens for as long (a reservation whose answer timed out stays counted until its window ends).
///
/// Memory: one entry per window in use (install × relay × kind, app × relay), at most `maxWindows`
/// (1,000,000, about 200 MB at worst): past it a new window is refused (`relay_busy`) rather than
/// left uncounted. A window is forgotten once it has ended and been synced; rows older than two
/// days are deleted.
final class RelayQuotas: Service, Sendable {
    enum Kind: String, Sendable {
        case installMinute = "install_minute"
        case installDay = "install_day"
        case appDay = "app_day"

        var seconds: Int64 { self == .installMinute ? 60 : 86_400 }
    }

    struct Window: Hashable, Sendable {
        let appID: String
        let relay: String
        /// The install's token subject; empty for the app's own quota.
        let subject: String
        let kind: Kind
        /// Seconds since 1970 at the window's start (minutes and UTC days).
        let start: Int64

        var end: Int64 { start + kind.seconds }
    }

    private struct Count {
        /// Before the window's first sync here: calls are admitted only from reservations.
        var reserving = false
        /// Calls this replica added to `relay_usage` ahead of admitting them, not yet given back.
        var reserved: Int64 = 0
        /// Reserved calls still to be admitted within the quota.
        var usable: Int64 = 0
        /// Reserved calls admitted.
        var used: Int64 = 0
        /// The last reservation found the quota spent by every replica's sum.
        var exhausted = false
        /// Every replica's calls, as of the last sync (or reservation) that returned this window.
        var synced: Int64 = 0
        /// This replica's calls being written by the sync under way.
        var flushing: Int64 = 0
        /// This replica's calls since.
        var pending: Int64 = 0
        /// When this replica last asked about it (seconds since 1970): for `rereadFor` after, each
        /// sync reads its sum back even when this replica admitted nothing.
        var usedAt: Int64 = 0
        var total: Int64 { synced + flushing + pending }

        /// Ends the reservation: from now on synced, the unused reserved calls to be given back.
        mutating func settle() {
            guard reserving else { return }
            self = Count(synced: synced, pending: pending - (reserved - used), usedAt: usedAt)
        }
    }

    /// Why a call was refused.
    enum Refusal: Error, Equatable {
        case exceeded(Kind, limit: Int, retryAfter: Int)
        case full
    }

    static let maxWindows = 1_000_000

    private let windows = Mutex<[Window: Count]>([:])
    private let database: Database
    private let syncInterval: Duration
    private let now: @Sendable () -> Date
    private let maxWindows: Int
    private let logger: Logger

    init(
        database: Database, syncInterval: Duration = .seconds(1), maxWindows: Int = RelayQuotas.maxWindows, logger: Logger,
        now: @escaping @Sendable () -> Date = Date.init
    ) {
        self.database = database
        self.syncInterval = syncInterval
        self.maxWindows = maxWindows
        self.logger = logger
        self.now = now
    }

    /// Counts one call of `subject` to `relay` of `appID` against `rules`' quotas, or refuses it
    /// (counting nothing) naming the first quota reached. Waits only while a window is reserved
    /// here (one round trip per share, each at most `firstReadTimeout`; without PostgreSQL the
    /// window starts from this replica's own count).
    func spend(appID: String, relay: String, subject: String, rules: RelayRules) async throws(Refusal) {
        let seconds = Int64(now().timeIntervalSince1970)
        var quotas: [(Window, Int)] = []
        func add(_ kind: Kind, _ limit: Int?, subject: String) {
            guard let limit else { return }
            quotas.append((Window(appID: appID, relay: relay, subject: subject, kind: kind, start: seconds - seconds % kind.seconds), limit))
        }
        add(.installMinute, rules.perInstallPerMinute, subject: subject)
        add(.installDay, rules.perInstallPerDay, subject: subject)
        add(.appDay, rules.perAppPerDay, subject: "")
        guard !quotas.isEmpty else { return }
        // Calls of this replica may take a share another one just reserved: a few tries.
        for _ in 0..<Self.reservationTries {
            let needed = windows.withLock { windows in
                quotas.filter { window, _ in windows[window].map { $0.reserving && $0.usable == 0 && !$0.exhausted } ?? true }
            }
            if !needed.isEmpty { await reserve(needed, at: seconds) }
            switch admit(quotas, at: seconds) {
            case .admitted: return
            case .refused(let refusal): throw refusal
            case .reserveAgain: continue
            }
        }
        throw .exceeded(quotas[0].0.kind, limit: quotas[0].1, retryAfter: 1)
    }

    private enum Admission {
        case admitted
        case refused(Refusal)
        case reserveAgain
    }

    /// Admits the call against every quota at once, or tells why not.
    private func admit(_ quotas: [(Window, Int)], at seconds: Int64) -> Admission {
        windows.withLock { windows in
            for (window, limit) in quotas {
                guard var count = windows[window] else { return .refused(.full) }
                count.usedAt = seconds
                windows[window] = count
                let spent = count.reserving ? count.usable == 0 : count.total >= Int64(limit)
                if spent, count.reserving, !count.exhausted { return .reserveAgain }
                if spent { return .refused(.exceeded(window.kind, limit: limit, retryAfter: Int(max(1, window.end - seconds)))) }
            }
            for (window, _) in quotas {
                if windows[window]!.reserving {
                    windows[window]!.usable -= 1
                    windows[window]!.used += 1
                } else {
                    windows[window]!.pending += 1
                }
            }
            return .admitted
        }
    }

    /// Adds a share of each quota to every replica's sums and keeps what the quota leaves room for.
    private func reserve(_ quotas: [(Window, Int)], at seconds: Int64) async {
        // A window this replica could not hold is refused (`full`) without a share counted for it.
        let newWindows = windows.withLock { windows in quotas.filter { windows[$0.0] == nil }.count }
        guard windows.withLock({ $0.count }) + newWindows <= maxWindows else { return }
        let shares = quotas.map { window, limit in (window, Int64(max(1, limit / Self.reservationShare))) }
        let sums = try? await withTimeout(Self.firstReadTimeout) { try await self.add(shares) }
        windows.withLock { windows in
            for ((window, limit), (_, share)) in zip(quotas, shares) {
                guard var count = windows[window] ?? (windows.count < maxWindows ? Count(reserving: true, usedAt: seconds) : nil) else { continue }
                guard let sum = sums?[window] else {
                    // PostgreSQL away: this replica counts alone.
                    count.settle()
                    windows[window] = count
                    continue
                }
                if count.reserving {
                    let room = min(share, max(0, Int64(limit) - (sum - share)))
                    count.reserved += share
                    count.usable += room
                    count.exhausted = room == 0
                    count.synced = sum
                } else {
                    // Synced meanwhile: give the share back at the next sync.
                    count.pending -= share
                }
                windows[window] = count
            }
        }
    }

    /// A reservation's share of a quota: an eighth, at least one call.
    static let reservationShare = 8
    static let reservationTries = 4
    static let firstReadTimeout: Duration = .milliseconds(500)
    /// Seconds after its last use that a window's sum is still read back at each sync: so a replica
    /// learns of the other replicas' calls within one sync, not only at its own next call.
    static let rereadFor: Int64 = 60

    /// Adds `counts` (negative to give calls back) to every replica's sums; returns the new sums.
    private func add(_ counts: [(Window, Int64)]) async throws -> [Window: Int64] {
        let rows = try await database.client.query(
            """
            INSERT INTO relay_usage AS usage (app_id, relay, subject, window_kind, window_start, calls)
            SELECT * FROM unnest(\(counts.map(\.0.appID))::text[], \(counts.map(\.0.relay))::text[], \(counts.map(\.0.subject))::text[],
                \(counts.map(\.0.kind.rawValue))::text[], \(counts.map { Date(timeIntervalSince1970: TimeInterval($0.0.start)) })::timestamptz[],
                \(counts.map(\.1))::bigint[])
            ON CONFLICT (app_id, relay, subject, window_kind, window_start) DO UPDATE SET calls = usage.calls + EXCLUDED.calls
            RETURNING app_id, relay, subject, window_kind, window_start, calls
            """, logger: logger)
        return try await Self.decode(rows)
    }

    private static func decode(_ rows: PostgresRowSequence) async throws -> [Window: Int64] {
        var sums: [Window: Int64] = [:]
        for try await (appID, relay, subject, kind, start, calls) in rows.decode((String, String, String, String, Date, Int64).self) {
            guard let kind = Kind(rawValue: kind) else { continue }
            sums[Window(appID: appID, relay: relay, subject: subject, kind: kind, start: Int64(start.timeIntervalSince1970))] = calls
        }
        return sums
    }

    func run() async throws {
        var sinceCleanup = Duration.zero
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            try? await cancelWhenGracefulShutdown { [syncInterval] in try await Task.sleep(for: syncInterval) }
            do {
                try await withTimeout(.seconds(30)) { try await self.sync() }
                sinceCleanup += syncInterval
                if sinceCleanup >= .seconds(3600) {
                    sinceCleanup = .zero
                    try await database.client.query("DELETE FROM relay_usage WHERE window_start < now() - interval '2 days'", logger: logger)
                }
            } catch {
                logger.warning("relay quotas not synced; counting alone until PostgreSQL answers", metadata: ["error": "\(String(reflecting: error))"])
            }
        }
        // The last calls admitted count for the replicas that stay.
        try? await withTimeout(.seconds(5)) { try await self.sync() }
    }

    /// Adds this replica's calls since the last sync to every replica's sums (giving back what it
    /// reserved and did not use) and reads back the sums of the windows used meanwhile; forgets
    /// windows that ended.
    func sync() async throws {
        let nowSeconds = Int64(now().timeIntervalSince1970)
        let batch: [(Window, Int64)] = windows.withLock { windows in
            var batch: [(Window, Int64)] = []
            for (window, var count) in windows where count.pending != 0 || count.reserving || count.usedAt > nowSeconds - Self.rereadFor {
                count.settle()
                batch.append((window, count.pending))
                count.flushing = count.pending
                count.pending = 0
                windows[window] = count
            }
            return batch
        }
        guard !batch.isEmpty else { return }
        let sums: [Window: Int64]
        do {
            sums = try await add(batch)
        } catch {
            // Not written: counted again at the next sync.
            windows.withLock { windows in
                for (window, _) in batch {
                    guard var count = windows[window] else { continue }
                    count.pending += count.flushing
                    count.flushing = 0
                    windows[window] = count
                }
            }
            throw error
        }
        windows.withLock { windows in
            for (window, _) in batch {
                windows[window]?.flushing = 0
                if let sum = sums[window] { windows[window]?.synced = sum }
            }
            windows = windows.filter { $0.key.end > nowSeconds || $0.value.pending != 0 }
        }
    }

    /// Windows held in memory (for tests).
    var windowsHeld: Int { windows.withLock { $0.count } }
}

import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import SesameDomain
import SesameStorage
import Synchronization

/// A relay's quotas (per install per minute and per day, per app per day), held across replicas.
///
/// Each replica decides in memory: a call is admitted while the calls every replica had counted
/// at this replica's last sync (or, for a window new to it, when it first read the window), plus
/// those it admitted since, stay under the quota. About once a `syncInterval` it adds what it
/// admitted to `relay_usage` and reads back the sums of every window it used in the last minute.
/// **Tolerance**: a window may exceed its quota by the
/// calls the *other* replicas admitted for it since this replica's last sync (one interval, 1 s by
/// default): exact with one replica, and an install's quota stays within a second's calls of it
/// with many. If PostgreSQL is away, each replica keeps counting alone and adds its counts when it
/// returns: nothing is lost, and the tolerance widens for as long.
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
        /// Every replica's calls, as of the last sync that returned this window.
        var synced: Int64 = 0
        /// This replica's calls being written by the sync under way.
        var flushing: Int64 = 0
        /// This replica's calls since.
        var pending: Int64 = 0
        /// When this replica last asked about it (seconds since 1970): for `rereadFor` after, each
        /// sync reads its sum back even when this replica admitted nothing.
        var usedAt: Int64 = 0
        var total: Int64 { synced + flushing + pending }
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
    /// (counting nothing) naming the first quota reached. Waits only for the first call of a
    /// window on this replica, which reads every replica's sum so far (at most `firstReadTimeout`;
    /// without PostgreSQL the window starts from this replica's own count).
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
        let unknown = windows.withLock { windows in quotas.map(\.0).filter { windows[$0] == nil } }
        if !unknown.isEmpty {
            let sums = (try? await withTimeout(Self.firstReadTimeout) { try await self.sums(of: unknown) }) ?? [:]
            windows.withLock { windows in
                for window in unknown where windows[window] == nil && windows.count < maxWindows {
                    windows[window] = Count(synced: sums[window] ?? 0, usedAt: seconds)
                }
            }
        }
        let refusal: Refusal? = windows.withLock { windows in
            if windows.count + quotas.count > maxWindows, quotas.contains(where: { windows[$0.0] == nil }) { return .full }
            for (window, limit) in quotas {
                windows[window, default: Count()].usedAt = seconds
                if windows[window]!.total >= Int64(limit) {
                    return .exceeded(window.kind, limit: limit, retryAfter: Int(max(1, window.end - seconds)))
                }
            }
            for (window, _) in quotas { windows[window]!.pending += 1 }
            return nil
        }
        if let refusal { throw refusal }
    }

    static let firstReadTimeout: Duration = .milliseconds(500)
    /// Seconds after its last use that a window's sum is still read back at each sync: so a replica
    /// learns of the other replicas' calls within one sync, not only at its own next call.
    static let rereadFor: Int64 = 60

    /// Every replica's sums for `windows`, as synced so far.
    private func sums(of windows: [Window]) async throws -> [Window: Int64] {
        let rows = try await database.client.query(
            """
            SELECT u.app_id, u.relay, u.subject, u.window_kind, u.window_start, u.calls FROM relay_usage u
            JOIN unnest(\(windows.map(\.appID))::text[], \(windows.map(\.relay))::text[], \(windows.map(\.subject))::text[],
                        \(windows.map(\.kind.rawValue))::text[], \(windows.map { Date(timeIntervalSince1970: TimeInterval($0.start)) })::timestamptz[])
                AS w(app_id, relay, subject, window_kind, window_start)
                ON u.app_id = w.app_id AND u.relay = w.relay AND u.subject = w.subject AND u.window_kind = w.window_kind
                   AND u.window_start = w.window_start
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

    /// Adds this replica's calls since the last sync to every replica's sums and reads back the sums
    /// of the windows used meanwhile; forgets windows that ended.
    func sync() async throws {
        let nowSeconds = Int64(now().timeIntervalSince1970)
        let batch: [(Window, Int64)] = windows.withLock { windows in
            var batch: [(Window, Int64)] = []
            for (window, count) in windows where count.pending > 0 || count.usedAt > nowSeconds - Self.rereadFor {
                batch.append((window, count.pending))
                windows[window]!.flushing = count.pending
                windows[window]!.pending = 0
            }
            return batch
        }
        guard !batch.isEmpty else { return }
        var sums: [Window: Int64] = [:]
        do {
            let rows = try await database.client.query(
                """
                INSERT INTO relay_usage AS usage (app_id, relay, subject, window_kind, window_start, calls)
                SELECT * FROM unnest(\(batch.map(\.0.appID))::text[], \(batch.map(\.0.relay))::text[], \(batch.map(\.0.subject))::text[],
                    \(batch.map(\.0.kind.rawValue))::text[], \(batch.map { Date(timeIntervalSince1970: TimeInterval($0.0.start)) })::timestamptz[],
                    \(batch.map(\.1))::bigint[])
                ON CONFLICT (app_id, relay, subject, window_kind, window_start) DO UPDATE SET calls = usage.calls + EXCLUDED.calls
                RETURNING app_id, relay, subject, window_kind, window_start, calls
                """, logger: logger)
            sums = try await Self.decode(rows)
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
            windows = windows.filter { $0.key.end > nowSeconds || $0.value.pending > 0 }
        }
    }

    /// Windows held in memory (for tests).
    var windowsHeld: Int { windows.withLock { $0.count } }
}

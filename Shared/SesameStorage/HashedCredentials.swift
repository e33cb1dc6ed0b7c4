import Foundation
import Logging
import PostgresNIO
import SesameDomain
import Synchronization

/// The lookup the tables of hashed bearer credentials share (provisioning keys, backend keys):
/// find a live row by the SHA-256 of the presented secret, compare once more in constant time, and
/// note its use at most once a minute, so busy callers do not turn reads into writes.
public enum HashedCredentials {
    /// A table of hashed credentials: `key_id`, `app_id`, `key_hash`, `last_used_at`, `revoked_at`.
    public enum Table: String, Sendable {
        case provisioningKeys = "provisioning_keys"
        case backendKeys = "backend_keys"

        /// What makes a row live: not revoked, and (a provisioning key made while the app's
        /// two-person rule is on) approved by a second person.
        var live: String {
            switch self {
            case .provisioningKeys: "revoked_at IS NULL AND pending_proposal IS NULL"
            case .backendKeys: "revoked_at IS NULL"
            }
        }
    }

    /// The key id and app of the live credential `secret`, or nil.
    public static func authenticate(_ secret: String, in table: Table, database: Database, logger: Logger) async throws -> (keyID: UUID, appID: String)? {
        try await authenticate(hash: BearerSecret.hash(secret), in: table, database: database, logger: logger)
    }

    /// Hashes that matched no row lately, refused without a query: an outsider repeating a made-up
    /// credential costs nothing after the first try (`FailedCredentialLimiter` bounds new ones).
    static let unknown = RecentlyUnknown(capacity: 10_000, lifetime: .seconds(60))

    /// The key id and app of the live credential whose SHA-256 is `hash`, or nil.
    public static func authenticate(hash: Data, in table: Table, database: Database, logger: Logger) async throws -> (keyID: UUID, appID: String)? {
        let remembered = table.rawValue + ":" + Hex.encode(hash)
        if unknown.contains(remembered) { return nil }
        let rows = try await database.client.query(
            "SELECT key_id, app_id, key_hash, \(unescaped: table.live) FROM \(unescaped: table.rawValue) WHERE key_hash = \(hash)", logger: logger)
        var found = false
        for try await (keyID, appID, stored, live) in rows.decode((UUID, String, Data, Bool).self) {
            found = true
            // The index found it by hash; compare once more without an early exit. A key revoked
            // or waiting for approval is refused, and not remembered as unknown: it may be approved.
            guard ConstantTime.equals(stored, hash), live else { return nil }
            try await database.client.query(
                """
                UPDATE \(unescaped: table.rawValue) SET last_used_at = now()
                WHERE key_id = \(keyID) AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')
                """, logger: logger)
            return (keyID, appID)
        }
        if !found { unknown.insert(remembered) }
        return nil
    }
}

/// A bounded set of strings, each forgotten `lifetime` after it was added; past `capacity`, the
/// oldest go first.
final class RecentlyUnknown: Sendable {
    private struct State {
        var added: [String: ContinuousClock.Instant] = [:]
        var order: [String] = []
    }

    private let state = Mutex(State())
    let capacity: Int
    let lifetime: Duration

    init(capacity: Int, lifetime: Duration) {
        self.capacity = capacity
        self.lifetime = lifetime
    }

    func contains(_ key: String, now: ContinuousClock.Instant = .now) -> Bool {
        state.withLock { state in
            guard let at = state.added[key] else { return false }
            return now - at < lifetime
        }
    }

    func insert(_ key: String, now: ContinuousClock.Instant = .now) {
        state.withLock { state in
            if state.added.updateValue(now, forKey: key) == nil { state.order.append(key) }
            if state.order.count > capacity {
                let dropped = state.order.count - capacity / 2
                for old in state.order.prefix(dropped) { state.added[old] = nil }
                state.order.removeFirst(dropped)
            }
        }
    }
}

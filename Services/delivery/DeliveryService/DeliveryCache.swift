import Synchronization

/// The in-memory state the hot path reads: every app's configs, kill switches and revocations.
/// Readers take a copy of one app's state under a short lock; writers replace it whole.
///
/// A full resync reads PostgreSQL before it writes here; an event-driven reload of an app that
/// happens in between is newer, so the resync leaves that app alone.
final class DeliveryCache: Sendable {
    private struct Contents {
        var apps: [String: AppState] = [:]
        /// Counts app reloads; `reloadedAt[app]` is the count when that app was last reloaded.
        var reloads: UInt64 = 0
        var reloadedAt: [String: UInt64] = [:]
        var loaded = false
    }

    /// Marks the start of a full resync.
    struct ResyncStart: Sendable {
        fileprivate let reloads: UInt64
    }

    private let contents = Mutex(Contents())

    /// Whether a full load from PostgreSQL has completed since start.
    var isLoaded: Bool { contents.withLock { $0.loaded } }

    func state(of appID: String) -> AppState? {
        contents.withLock { $0.apps[appID] }
    }

    /// Replaces one app's state after an event.
    func replace(_ appID: String, with state: AppState?) {
        contents.withLock {
            $0.reloads += 1
            $0.reloadedAt[appID] = $0.reloads
            $0.apps[appID] = state
        }
    }

    /// Call before reading PostgreSQL for a full resync.
    func beginResync() -> ResyncStart {
        ResyncStart(reloads: contents.withLock { $0.reloads })
    }

    /// Replaces every app's state with what the resync read, except apps reloaded since it began.
    func finishResync(_ start: ResyncStart, states: [String: AppState]) {
        contents.withLock { contents in
            let newer = Set(contents.reloadedAt.filter { $0.value > start.reloads }.keys)
            var apps = states.filter { !newer.contains($0.key) }
            for appID in newer { apps[appID] = contents.apps[appID] }
            contents.apps = apps
            contents.reloadedAt = contents.reloadedAt.filter { newer.contains($0.key) }
            contents.loaded = true
        }
    }

    /// The configs held now, to reuse their decrypted bodies when reloading.
    func configs(of appID: String) -> [String: ServedConfig] {
        contents.withLock { $0.apps[appID]?.configs ?? [:] }
    }

    func allConfigs() -> [String: [String: ServedConfig]] {
        contents.withLock { $0.apps.mapValues(\.configs) }
    }
}

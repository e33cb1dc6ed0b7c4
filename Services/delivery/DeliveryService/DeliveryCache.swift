import SesameDomain
import Synchronization

/// The in-memory state the hot path reads: every app's configs, kill switches and revocations.
/// Readers take a copy of one app's state under a short lock; writers replace it whole.
///
/// A full resync reads PostgreSQL before it writes here; an event-driven reload of an app that
/// happens in between is newer, so the resync leaves that app alone.
///
/// An app whose load failed keeps the state last held for it; with none held it is unavailable
/// (never served as an app with no kill switch and no revocation).
final class DeliveryCache: Sendable {
    private struct Contents {
        var apps: [String: AppState] = [:]
        /// Apps whose last load failed, with why.
        var failing: [String: String] = [:]
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
    /// Wakes the live-config streams of the apps whose state is replaced.
    let notices: AppChangeNotices

    init(notices: AppChangeNotices = AppChangeNotices()) {
        self.notices = notices
    }

    /// Whether a full load from PostgreSQL has completed since start.
    var isLoaded: Bool { contents.withLock { $0.loaded } }

    /// The state to serve `appID` from: what is held, an empty state for an app with nothing
    /// published, or nil when the app could not be loaded and nothing is held for it, and before
    /// the first load (fail closed: an app not read yet may have configs, kill switches and
    /// revocations, and must not be served as if it had none).
    func state(of appID: String) -> AppState? {
        contents.withLock { contents in
            if let held = contents.apps[appID] { return held }
            let read = contents.loaded || contents.reloadedAt[appID] != nil
            return read && contents.failing[appID] == nil ? AppState() : nil
        }
    }

    /// The apps whose last load failed, with why.
    var failing: [String: String] { contents.withLock { $0.failing } }

    /// Applies one app's reload after an event.
    func replace(_ appID: String, with loaded: DeliveryLoader.Loaded) {
        contents.withLock {
            $0.reloads += 1
            $0.reloadedAt[appID] = $0.reloads
            if let failure = loaded.failures[appID] {
                $0.failing[appID] = failure
            } else {
                $0.failing[appID] = nil
                $0.apps[appID] = loaded.states[appID]
            }
        }
        notices.changed(CollectionOfOne(appID))
    }

    /// Call before reading PostgreSQL for a full resync.
    func beginResync() -> ResyncStart {
        ResyncStart(reloads: contents.withLock { $0.reloads })
    }

    /// Replaces the state of every app in `scope` (every app when nil: a full load) with what the
    /// resync read, except apps reloaded since it began and apps that failed to load, which keep
    /// what they had. An app in scope that the resync did not find has nothing left to serve.
    func finishResync(_ start: ResyncStart, loaded: DeliveryLoader.Loaded, scope: Set<String>?) {
        let replaced = contents.withLock { contents in
            let newer = Set(contents.reloadedAt.filter { $0.value > start.reloads }.keys)
            let affected = scope ?? Set(contents.apps.keys).union(contents.failing.keys).union(loaded.states.keys).union(loaded.failures.keys)
            for appID in affected where !newer.contains(appID) {
                if let failure = loaded.failures[appID] {
                    contents.failing[appID] = failure
                } else {
                    contents.failing[appID] = nil
                    contents.apps[appID] = loaded.states[appID]
                }
            }
            contents.reloadedAt = contents.reloadedAt.filter { newer.contains($0.key) }
            contents.loaded = true
            return affected.subtracting(newer)
        }
        notices.changed(replaced)
    }

    /// The configs held now for `appIDs` (each pattern's newest, and what a rollout's other
    /// installs get), to reuse their decrypted bodies when reloading.
    func configs(of appIDs: some Sequence<String>) -> [String: [ServedConfig]] {
        contents.withLock { contents in
            Dictionary(uniqueKeysWithValues: appIDs.compactMap { appID in contents.apps[appID].map { (appID, $0.release.held) } })
        }
    }

    /// Whether `appID`'s release still has the rollout `id` (as answers write it) in flight.
    func rolloutInFlight(id: String, appID: String) -> Bool {
        contents.withLock { contents in contents.apps[appID]?.release.rollouts.values.contains { $0.idText == id } ?? false }
    }

    func allConfigs() -> [String: [ServedConfig]] {
        contents.withLock { $0.apps.mapValues(\.release.held) }
    }
}

extension AppRelease<ServedConfig> {
    /// Every config this release holds.
    var held: [ServedConfig] {
        Array(configs.values) + rollouts.values.compactMap(\.previous) + overrides.values.flatMap(\.values)
    }
}

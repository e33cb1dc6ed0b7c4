import Foundation

/// The secure store as SesameKit uses it, cleared of the previous install's items on an install's
/// first use. iOS keeps Keychain items when an app is deleted, so a reinstall would find the old
/// install's refresh token, App Attest key id and saved configs (a config bought by another user,
/// a family the server may have revoked). A marker file in the app's own container, which iOS
/// deletes with the app, tells the first use apart: without it, SesameKit's items are removed
/// before anything is read, then the marker is written.
///
/// An app that adopts this version of SesameKit meets it once as a first use too: its installs
/// attest a new key at that launch.
final class ReinstallAwareStore: SecureStore {
    private let store: any SecureStore
    private let marker: URL
    /// Whether this process has made sure of the marker (a failed clearing is tried again at the next use).
    private let checked = Locked(false)

    /// `store`, cleared at first use unless `marker` exists.
    init(_ store: any SecureStore, marker: URL) {
        self.store = store
        self.marker = marker
    }

    func data(for key: String) throws -> Data? {
        try clearAfterReinstallOnce()
        return try store.data(for: key)
    }

    func set(_ data: Data, for key: String) throws {
        try clearAfterReinstallOnce()
        try store.set(data, for: key)
    }

    func remove(_ key: String) throws {
        try clearAfterReinstallOnce()
        try store.remove(key)
    }

    private func clearAfterReinstallOnce() throws {
        try checked.withLock { checked in
            guard !checked else { return }
            if !FileManager.default.fileExists(atPath: marker.path) {
                try StoreKeys.removeAll(from: store)
                do {
                    try FileManager.default.createDirectory(at: marker.deletingLastPathComponent(), withIntermediateDirectories: true)
                    try Data().write(to: marker)
                } catch {
                    // Not fatal: this launch goes on; the next one clears (and attests) once more.
                    SesameLog.warning("the first-run marker could not be written (\(error)); the next launch will start afresh too")
                }
            }
            checked = true
        }
    }

    /// The marker's place when the app does not say: `SesameKit/installed-<bundle id>` in
    /// Application Support on Apple platforms (inside the app's container, deleted with it; named
    /// for the app, since a Mac app outside the sandbox shares the folder); none elsewhere (a Linux
    /// tool has no reinstall to detect).
    static func defaultMarker(bundleID: String) -> URL? {
        #if canImport(Darwin)
        FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first?
            .appendingPathComponent("SesameKit", isDirectory: true).appendingPathComponent("installed-" + bundleID)
        #else
        nil
        #endif
    }
}

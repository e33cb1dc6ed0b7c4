import Foundation

/// Where SesameKit keeps what must survive a relaunch: the App Attest key id, the refresh token and
/// the saved configs. `SesameKeychainStore` on Apple platforms; `InMemorySecureStore` in tests.
public protocol SecureStore: Sendable {
    /// The data saved under `key`, or nil.
    func data(for key: String) throws -> Data?
    /// Saves `data` under `key`, replacing what was there.
    func set(_ data: Data, for key: String) throws
    /// Forgets `key`.
    func remove(_ key: String) throws
}

/// A `SecureStore` that forgets everything with the process: for tests, and for apps that want
/// nothing saved.
public final class InMemorySecureStore: SecureStore {
    private let items = Locked<[String: Data]>([:])

    /// An empty store.
    public init() {}

    public func data(for key: String) throws -> Data? { items.withLock { $0[key] } }
    public func set(_ data: Data, for key: String) throws { items.withLock { $0[key] = data } }
    public func remove(_ key: String) throws { _ = items.withLock { $0.removeValue(forKey: key) } }

    /// The keys saved now (for tests).
    public var keys: [String] { items.withLock { Array($0.keys) } }
}

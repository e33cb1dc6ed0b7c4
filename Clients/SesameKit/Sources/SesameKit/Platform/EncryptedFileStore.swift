import Crypto
import Foundation

/// A `SecureStore` in a folder, each item sealed with AES-256-GCM under a key the caller holds:
/// for platforms without a Keychain (Linux tools such as `sesame-device`) and for tests that
/// relaunch. Item names are hashed, so the folder does not reveal what is stored.
public struct EncryptedFileStore: SecureStore {
    /// The folder the sealed items live in.
    public let directory: URL
    /// The key's bytes: CryptoKit's `SymmetricKey` is not `Sendable` in every SDK SesameKit builds
    /// with (macOS 14's, for one), and this store is.
    private let keyBytes: Data
    private var key: SymmetricKey { SymmetricKey(data: keyBytes) }

    /// Stores items in `directory` (created when missing), sealed under `key` (32 bytes).
    public init(directory: URL, key: SymmetricKey) throws {
        self.directory = directory
        self.keyBytes = key.withUnsafeBytes { Data($0) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    public func data(for name: String) throws -> Data? {
        guard let sealed = FileManager.default.contents(atPath: file(name).path) else { return nil }
        // The item's name is bound into each seal: a file copied over another's does not open.
        return try AES.GCM.open(AES.GCM.SealedBox(combined: sealed), using: key, authenticating: Data(name.utf8))
    }

    public func set(_ data: Data, for name: String) throws {
        guard let sealed = try AES.GCM.seal(data, using: key, authenticating: Data(name.utf8)).combined else { return }
        try sealed.write(to: file(name), options: .atomic)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file(name).path)
    }

    public func remove(_ name: String) throws {
        guard FileManager.default.fileExists(atPath: file(name).path) else { return }
        try FileManager.default.removeItem(at: file(name))
    }

    private func file(_ name: String) -> URL {
        directory.appendingPathComponent(SHA256.hash(data: Data(name.utf8)).lowercaseHex)
    }
}

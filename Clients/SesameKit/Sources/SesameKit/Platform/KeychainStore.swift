#if canImport(Security)
import Foundation
import Security

/// `SecureStore` in the Keychain: generic-password items of one service, readable after the
/// device's first unlock and never leaving it (`kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly`:
/// no backup restores them elsewhere, no iCloud sync). Apple-only and kept to the Keychain calls.
public struct KeychainStore: SecureStore {
    /// The Keychain service the items are filed under.
    public let service: String

    /// A store of items filed under `service`.
    public init(service: String = "SesameKit") {
        self.service = service
    }

    public func data(for key: String) throws -> Data? {
        var query = item(key)
        query[kSecReturnData as String] = true
        query[kSecMatchLimit as String] = kSecMatchLimitOne
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        if status == errSecItemNotFound { return nil }
        guard status == errSecSuccess else { throw KeychainError(status: status) }
        return result as? Data
    }

    public func set(_ data: Data, for key: String) throws {
        let attributes: [String: Any] = [
            kSecValueData as String: data, kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly,
        ]
        var status = SecItemUpdate(item(key) as CFDictionary, attributes as CFDictionary)
        if status == errSecItemNotFound {
            status = SecItemAdd(item(key).merging(attributes) { $1 } as CFDictionary, nil)
        }
        guard status == errSecSuccess else { throw KeychainError(status: status) }
    }

    public func remove(_ key: String) throws {
        let status = SecItemDelete(item(key) as CFDictionary)
        guard status == errSecSuccess || status == errSecItemNotFound else { throw KeychainError(status: status) }
    }

    private func item(_ key: String) -> [String: Any] {
        [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service, kSecAttrAccount as String: key]
    }
}

/// A Keychain call failed with `status` (an `OSStatus`).
public struct KeychainError: Error, Sendable, Equatable {
    /// The Keychain's result code.
    public let status: OSStatus
}
#endif

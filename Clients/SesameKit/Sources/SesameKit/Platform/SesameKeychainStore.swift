#if canImport(Security)
import Foundation
import Security

/// `SecureStore` in the Keychain: generic-password items of one service, readable after the
/// device's first unlock and never leaving it (`kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly`:
/// no backup restores them elsewhere, no iCloud sync), in the data-protection keychain on macOS
/// too. Apple-only and kept to the Keychain calls.
///
/// The service defaults to `SesameKit.<bundle id>`, so an app and its extensions keep apart their
/// App Attest keys (each has its own App ID) and refresh tokens (presenting one twice revokes it)
/// even when they share a keychain access group.
public struct SesameKeychainStore: SecureStore {
    /// The Keychain service the items are filed under.
    public let service: String
    /// The keychain access group the items live in (`TEAMID.com.example.shared`); nil for the
    /// app's default group (the first of its `keychain-access-groups`).
    public let accessGroup: String?

    /// A store of items filed under `service` in `accessGroup`.
    public init(service: String = "SesameKit." + (Bundle.main.bundleIdentifier ?? "app"), accessGroup: String? = nil) {
        self.service = service
        self.accessGroup = accessGroup
    }

    public func data(for key: String) throws -> Data? {
        var query = item(key)
        query[kSecReturnData as String] = true
        query[kSecMatchLimit as String] = kSecMatchLimitOne
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        if status == errSecItemNotFound { return nil }
        guard status == errSecSuccess else { throw SesameKeychainError(status: status) }
        return result as? Data
    }

    public func set(_ data: Data, for key: String) throws {
        let attributes: [String: Any] = [
            kSecValueData as String: data, kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly,
        ]
        var status = SecItemUpdate(item(key) as CFDictionary, attributes as CFDictionary)
        if status == errSecItemNotFound {
            status = SecItemAdd(item(key).merging(attributes) { $1 } as CFDictionary, nil)
            // Another thread added it between the update and the add: update what it added.
            if status == errSecDuplicateItem { status = SecItemUpdate(item(key) as CFDictionary, attributes as CFDictionary) }
        }
        guard status == errSecSuccess else { throw SesameKeychainError(status: status) }
    }

    public func remove(_ key: String) throws {
        let status = SecItemDelete(item(key) as CFDictionary)
        guard status == errSecSuccess || status == errSecItemNotFound else { throw SesameKeychainError(status: status) }
    }

    private func item(_ key: String) -> [String: Any] {
        var item: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service, kSecAttrAccount as String: key,
            // iOS always uses it; on macOS it keeps the items out of the legacy file-based keychain.
            kSecUseDataProtectionKeychain as String: true,
        ]
        if let accessGroup { item[kSecAttrAccessGroup as String] = accessGroup }
        return item
    }
}

/// A Keychain call failed with `status` (an `OSStatus`).
public struct SesameKeychainError: Error, Sendable, Equatable {
    /// The Keychain's result code.
    public let status: OSStatus
}

/// Renamed `SesameKeychainStore`, so that an app's own `KeychainStore` does not collide with it.
@available(*, deprecated, renamed: "SesameKeychainStore")
public typealias KeychainStore = SesameKeychainStore
/// Renamed `SesameKeychainError`.
@available(*, deprecated, renamed: "SesameKeychainError")
public typealias KeychainError = SesameKeychainError
#endif

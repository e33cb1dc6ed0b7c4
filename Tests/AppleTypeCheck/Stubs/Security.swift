// Security's Keychain calls as SesameKit makes them: Apple's published Swift signatures with their
// `@available` lines. CoreFoundation's bridged types are stood in for by Swift's own (`CFString` by
// `String`, `CFDictionary` by `[String: Any]`), which keeps every call's labels, arity, `inout`
// and result types checked. Bodies never run. Not a product; nothing links it.
import Foundation

#if canImport(FoundationNetworking)
// URLSession and its kin are Foundation's on Apple platforms, FoundationNetworking's on Linux:
// files written for Apple import Foundation and Security only.
@_exported import FoundationNetworking
#endif

public typealias OSStatus = Int32
public typealias CFTypeRef = AnyObject
public typealias CFString = String
public typealias CFDictionary = [String: Any]

public let errSecSuccess: OSStatus = 0
public let errSecItemNotFound: OSStatus = -25300
public let errSecDuplicateItem: OSStatus = -25299
public let errSecInteractionNotAllowed: OSStatus = -25308

public let kSecClass: CFString = "class"
public let kSecClassGenericPassword: CFString = "genp"
public let kSecAttrService: CFString = "svce"
public let kSecAttrAccount: CFString = "acct"
@available(iOS 3.0, macOS 10.9, *)
public let kSecAttrAccessGroup: CFString = "agrp"
public let kSecValueData: CFString = "v_Data"
public let kSecReturnData: CFString = "r_Data"
public let kSecMatchLimit: CFString = "m_Limit"
public let kSecMatchLimitOne: CFString = "m_LimitOne"
@available(iOS 4.0, macOS 10.9, *)
public let kSecAttrAccessible: CFString = "pdmn"
@available(iOS 4.0, macOS 10.9, *)
public let kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly: CFString = "cku"
@available(iOS 13.0, macOS 10.15, *)
public let kSecUseDataProtectionKeychain: CFString = "u_DataProtectionKeychain"

@available(iOS 2.0, macOS 10.6, *)
public func SecItemCopyMatching(_ query: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    fatalError("a type-checking stub")
}

@available(iOS 2.0, macOS 10.6, *)
public func SecItemAdd(_ attributes: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus { fatalError("a type-checking stub") }

@available(iOS 2.0, macOS 10.6, *)
public func SecItemUpdate(_ query: CFDictionary, _ attributesToUpdate: CFDictionary) -> OSStatus { fatalError("a type-checking stub") }

@available(iOS 2.0, macOS 10.6, *)
public func SecItemDelete(_ query: CFDictionary) -> OSStatus { fatalError("a type-checking stub") }

// MARK: Server trust (SesamePinning)

public typealias CFData = Data
public typealias CFArray = [Any]
public typealias CFError = NSError

public final class SecTrust: @unchecked Sendable {}
public final class SecCertificate: @unchecked Sendable {}

@available(iOS 12.0, macOS 10.14, *)
public func SecTrustEvaluateWithError(_ trust: SecTrust, _ error: UnsafeMutablePointer<CFError?>?) -> Bool { fatalError("a type-checking stub") }

@available(iOS 15.0, macOS 12.0, *)
public func SecTrustCopyCertificateChain(_ trust: SecTrust) -> CFArray? { fatalError("a type-checking stub") }

@available(iOS 2.0, macOS 10.6, *)
public func SecCertificateCopyData(_ certificate: SecCertificate) -> CFData { fatalError("a type-checking stub") }

// Foundation's declarations about server trust (Foundation's on Apple platforms; Linux's
// FoundationNetworking marks this one unavailable, and this module, which imports it, shadows it).
@available(iOS 3.0, macOS 10.6, *)
public let NSURLAuthenticationMethodServerTrust: String = "NSURLAuthenticationMethodServerTrust"

// Foundation's members that carry a `SecTrust` (declared by Foundation on Apple platforms).
extension URLProtectionSpace {
    @available(iOS 3.0, macOS 10.6, *)
    public var serverTrust: SecTrust? { fatalError("a type-checking stub") }
}

extension URLCredential {
    @available(iOS 3.0, macOS 10.6, *)
    public convenience init(trust: SecTrust) { fatalError("a type-checking stub") }
}

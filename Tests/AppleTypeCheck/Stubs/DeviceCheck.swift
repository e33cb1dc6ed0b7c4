// DeviceCheck as SesameKit calls it: Apple's published Swift signatures (the iOS 18 SDK's
// DeviceCheck.framework, as Xcode's generated interface shows them) with their `@available` lines.
// Bodies never run: this module exists so that `swiftc -typecheck` can compile SesameKit's
// Apple-only lines on Linux. Not a product; nothing links it.
import Foundation

@available(iOS 14.0, macOS 11.0, tvOS 15.0, watchOS 9.0, *)
open class DCAppAttestService: NSObject, @unchecked Sendable {
    open class var shared: DCAppAttestService { fatalError("a type-checking stub") }
    open var isSupported: Bool { fatalError("a type-checking stub") }
    open func generateKey(completionHandler: @escaping @Sendable (String?, (any Error)?) -> Void) { fatalError("a type-checking stub") }
    open func generateKey() async throws -> String { fatalError("a type-checking stub") }
    open func attestKey(_ keyId: String, clientDataHash: Data, completionHandler: @escaping @Sendable (Data?, (any Error)?) -> Void) {
        fatalError("a type-checking stub")
    }
    open func attestKey(_ keyId: String, clientDataHash: Data) async throws -> Data { fatalError("a type-checking stub") }
    open func generateAssertion(_ keyId: String, clientDataHash: Data, completionHandler: @escaping @Sendable (Data?, (any Error)?) -> Void) {
        fatalError("a type-checking stub")
    }
    open func generateAssertion(_ keyId: String, clientDataHash: Data) async throws -> Data { fatalError("a type-checking stub") }
}

@available(iOS 11.0, macOS 10.15, tvOS 11.0, watchOS 9.0, *)
open class DCDevice: NSObject, @unchecked Sendable {
    open class var current: DCDevice { fatalError("a type-checking stub") }
    open var isSupported: Bool { fatalError("a type-checking stub") }
    open func generateToken(completionHandler: @escaping @Sendable (Data?, (any Error)?) -> Void) { fatalError("a type-checking stub") }
    open func generateToken() async throws -> Data { fatalError("a type-checking stub") }
}

@available(iOS 11.0, macOS 10.15, tvOS 11.0, watchOS 9.0, *)
public let DCErrorDomain: String = "com.apple.devicecheck.error"

/// `DCError` as Swift imports an `NS_ERROR_ENUM`: a struct with a `code`.
@available(iOS 11.0, macOS 10.15, tvOS 11.0, watchOS 9.0, *)
public struct DCError: Error, Hashable, Sendable {
    public enum Code: Int, Sendable {
        case unknownSystemFailure = 0
        case featureUnsupported = 1
        case invalidInput = 2
        case invalidKey = 3
        case serverUnavailable = 4
    }

    public let code: Code
    public static var errorDomain: String { DCErrorDomain }
    public static var unknownSystemFailure: Code { .unknownSystemFailure }
    public static var featureUnsupported: Code { .featureUnsupported }
    public static var invalidInput: Code { .invalidInput }
    public static var invalidKey: Code { .invalidKey }
    public static var serverUnavailable: Code { .serverUnavailable }
}

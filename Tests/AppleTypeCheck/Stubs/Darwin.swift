// What Foundation has on Apple platforms only and SesameKit calls under `#if canImport(Darwin)`:
// Apple's published Swift signatures with their `@available` lines, added to Linux's Foundation.
// Bodies never run. Not a product; nothing links it.
import Foundation

extension ProcessInfo {
    @available(iOS 8.2, macOS 10.10.3, tvOS 9.0, watchOS 2.0, *)
    public func performExpiringActivity(withReason reason: String, using block: @escaping @Sendable (Bool) -> Void) {
        fatalError("a type-checking stub")
    }
}

import Foundation

/// A value behind a lock that exists at SesameKit's deployment targets: `Synchronization.Mutex`
/// needs iOS 18 and macOS 15, `NSLock` is in Foundation everywhere.
package final class Locked<Value: Sendable>: @unchecked Sendable {
    // @unchecked: `value` is read and written only while `lock` is held.
    private let lock = NSLock()
    private var value: Value

    package init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with the value, holding the lock.
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

import Synchronization

/// Values made once per text key and kept, for texts that come back with every request (a stored
/// policy, a request target): making the value cost more than looking it up. Keyed by the text
/// itself, so nothing needs invalidating. Bounded: emptied when full, as keys may be the client's
/// to invent.
public final class BoundedMemo<Value: Sendable>: Sendable {
    private let values = Mutex<[String: Value]>([:])
    private let capacity: Int

    public init(capacity: Int = 1_000) { self.capacity = capacity }

    /// The value for `key`, made by `make` the first time (a throw is not remembered).
    public func value(for key: String, make: (String) throws -> Value) rethrows -> Value {
        if let value = values.withLock({ $0[key] }) { return value }
        let value = try make(key)
        values.withLock { values in
            if values.count >= capacity { values.removeAll(keepingCapacity: true) }
            values[key] = value
        }
        return value
    }
}

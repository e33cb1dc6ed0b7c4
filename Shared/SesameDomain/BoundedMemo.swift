import Synchronization

/// Values kept by key behind a lock, for what comes back with every request and costs more to make
/// than to look up (a stored policy decoded, a request target parsed, a verified certificate).
/// Bounded: emptied when full, as keys may be a client's to invent.
public final class BoundedMemo<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private let values = Mutex<[Key: Value]>([:])
    private let capacity: Int

    public init(capacity: Int = 1_000) { self.capacity = capacity }

    /// The value kept for `key`, if any.
    public func value(for key: Key) -> Value? {
        values.withLock { $0[key] }
    }

    /// Keeps `value` for `key`, replacing what was kept.
    public func remember(_ value: Value, for key: Key) {
        values.withLock { values in
            if values.count >= capacity, values[key] == nil { values.removeAll(keepingCapacity: true) }
            values[key] = value
        }
    }

    /// The value for `key`, made by `make` the first time (a throw is not remembered).
    public func value(for key: Key, make: (Key) throws -> Value) rethrows -> Value {
        if let value = value(for: key) { return value }
        let value = try make(key)
        remember(value, for: key)
        return value
    }
}

import Synchronization

/// A number that grows each time a `TokenAuthority`'s set of verifying keys changes, readable
/// without waiting: whoever remembers verdicts reached with the keys (delivery's verified-token
/// memory) compares it to forget them when a key leaves the set, whichever path reloaded the keys.
public final class KeySetGeneration: Sendable {
    private let value = Atomic<UInt64>(0)

    public init() {}

    /// The current generation; 0 before the first load.
    public var current: UInt64 { value.load(ordering: .acquiring) }

    func advance() { value.add(1, ordering: .releasing) }
}

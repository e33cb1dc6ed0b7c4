import Synchronization

/// Whether a client's last metadata request reached a broker: written by its librdkafka thread,
/// read by readiness checks.
final class BrokerReachability: Sendable {
    private let reachable = Atomic<Bool>(false)

    /// Records the outcome of the latest request.
    func record(_ isReachable: Bool) { reachable.store(isReachable, ordering: .releasing) }

    /// The outcome of the latest request; false before the first.
    var isReachable: Bool { reachable.load(ordering: .acquiring) }
}

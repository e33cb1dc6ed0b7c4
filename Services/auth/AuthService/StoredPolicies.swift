import SesameDomain
import Synchronization

/// App policies decoded once per stored text. Every attest and refresh reads its app's policy
/// with its other rows, and the same few policies come back each time: decoding their JSON cost
/// more than the rest of the answer. Keyed by the text itself, so nothing needs invalidating; a
/// changed policy is a new text. Bounded: emptied when full.
final class StoredPolicies: Sendable {
    private let decoded = Mutex<[String: AppPolicy]>([:])
    private let capacity: Int

    init(capacity: Int = 1_000) { self.capacity = capacity }

    /// The policy `json` (as stored in `apps.policy`) says.
    func policy(_ json: String) throws -> AppPolicy {
        if let policy = decoded.withLock({ $0[json] }) { return policy }
        let policy = try AppPolicy(storedJSON: json)
        decoded.withLock { decoded in
            if decoded.count >= capacity { decoded.removeAll(keepingCapacity: true) }
            decoded[json] = policy
        }
        return policy
    }
}

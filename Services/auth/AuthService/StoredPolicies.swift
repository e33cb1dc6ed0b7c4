import SesameDomain

/// App policies decoded once per stored text. Every attest and refresh reads its app's policy
/// with its other rows, and the same few policies come back each time: decoding their JSON cost
/// more than the rest of the answer. A changed policy is a new text.
struct StoredPolicies: Sendable {
    private let decoded = BoundedMemo<String, AppPolicy>()

    /// The policy `json` (as stored in `apps.policy`) says.
    func policy(_ json: String) throws -> AppPolicy {
        try decoded.value(for: json) { try AppPolicy(storedJSON: $0) }
    }
}

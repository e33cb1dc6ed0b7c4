import Foundation

/// The ids of the most recent events seen, bounded in size: the idempotent layer that drops an
/// event delivered twice (Kafka delivery is at least once).
struct RecentEventIDs {
    private var order: [UUID?]
    private var members: Set<UUID> = []
    private var next = 0

    /// Remembers up to `capacity` ids; the oldest is forgotten first.
    init(capacity: Int) {
        order = Array(repeating: nil, count: max(1, capacity))
    }

    /// Records `id`; false if it was already among the recent ids.
    mutating func insert(_ id: UUID) -> Bool {
        guard !members.contains(id) else { return false }
        if let evicted = order[next] { members.remove(evicted) }
        order[next] = id
        members.insert(id)
        next = (next + 1) % order.count
        return true
    }
}

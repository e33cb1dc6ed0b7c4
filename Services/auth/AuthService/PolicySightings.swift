import SesameDomain
import Synchronization

/// Each app's policy as auth last read it. A refresh assumes it to decide, before any round trip,
/// whether the request can pass in one statement, and that statement checks the assumption
/// against the stored policy: a stale sighting costs the refresh its second round trip, never a
/// wrong answer.
final class PolicySightings: Sendable {
    /// A policy as stored, and what it says.
    struct Sighting: Sendable {
        let text: String
        let policy: AppPolicy
    }

    private let sightings = Mutex<[String: Sighting]>([:])
    private let capacity: Int

    /// `capacity`: apps remembered before starting again (app ids come from tokens auth signed).
    init(capacity: Int = 10_000) { self.capacity = capacity }

    /// The policy `appID` had when last read, if it has been.
    func lastSeen(of appID: String) -> Sighting? {
        sightings.withLock { $0[appID] }
    }

    /// Notes that `appID`'s policy read as `sighting`.
    func saw(_ sighting: Sighting, of appID: String) {
        sightings.withLock { sightings in
            if sightings[appID]?.text == sighting.text { return }
            if sightings.count >= capacity { sightings.removeAll(keepingCapacity: true) }
            sightings[appID] = sighting
        }
    }
}

import SesameDomain

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

    private let sightings: BoundedMemo<String, Sighting>

    /// `capacity`: apps remembered before starting again (app ids come from tokens auth signed).
    init(capacity: Int = 10_000) { sightings = BoundedMemo(capacity: capacity) }

    /// The policy `appID` had when last read, if it has been.
    func lastSeen(of appID: String) -> Sighting? {
        sightings.value(for: appID)
    }

    /// Notes that `appID`'s policy read as `sighting`.
    func saw(_ sighting: Sighting, of appID: String) {
        if sightings.value(for: appID)?.text == sighting.text { return }
        sightings.remember(sighting, for: appID)
    }
}

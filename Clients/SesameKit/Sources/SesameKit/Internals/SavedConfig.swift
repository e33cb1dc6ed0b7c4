import Foundation

/// A config as saved between launches: what Sesame sent (a zero-knowledge config stays sealed) and
/// how long it may be used without asking again.
struct SavedConfig: Codable, Sendable {
    /// The `config` member exactly as Sesame sent it.
    var body: Data
    var etag: String?
    var revision: Int64
    var matchedPattern: String
    /// When Sesame last sent or confirmed it, by the wall clock.
    var confirmedAt: Date
    /// The system's uptime then (absent from configs saved before it was kept).
    var confirmedUptime: TimeInterval?
    /// Seconds after `confirmedAt` it counts as fresh (`Cache-Control: max-age`, `refreshAfter`).
    var freshFor: Int
    /// The tier it was served at (absent from configs saved before tiers existed: attested).
    var tier: SesameConfig.Tier?
    var withheld: [String]?
    /// Where a staged rollout placed the install (absent from configs saved before rollouts existed).
    var rollout: SesameConfig.Rollout?

    /// How far behind `confirmedAt` the wall clock may read before it counts as set back (clock
    /// corrections by the network are smaller).
    static let clockTolerance: TimeInterval = 60

    /// Its age: by the wall clock or by the uptime since, whichever is longer, so that setting the
    /// clock back does not make it younger. Nil when the wall clock reads more than
    /// `clockTolerance` before `confirmedAt` and the device has restarted since (no uptime to
    /// measure by): its age is unknown.
    func age(now: Date, uptime: TimeInterval) -> TimeInterval? {
        let byWallClock = now.timeIntervalSince(confirmedAt)
        // An uptime below the one recorded means the device restarted: it measures nothing then.
        let byUptime = confirmedUptime.flatMap { uptime >= $0 ? uptime - $0 : nil }
        if byWallClock < -Self.clockTolerance { return byUptime }
        return max(byWallClock, byUptime ?? 0)
    }

    /// Whether it may be served without asking Sesame: younger than `freshFor`, and the wall clock
    /// not set back before it (a clock moved back always sends the app to Sesame, which may have a
    /// kill switch to tell).
    func isFresh(now: Date, uptime: TimeInterval) -> Bool {
        guard now.timeIntervalSince(confirmedAt) >= -Self.clockTolerance, let age = age(now: now, uptime: uptime) else { return false }
        return age < TimeInterval(freshFor)
    }
}

/// `GET /v1/config`'s reply.
struct ConfigReply: Sendable {
    let body: Data
    let revision: Int64
    let matchedPattern: String
    let refreshAfter: Int?
    let tier: SesameConfig.Tier?
    let withheld: [String]
    let rollout: SesameConfig.Rollout?

    /// Reads the reply, keeping `config`'s own bytes.
    init?(_ data: Data) {
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let config = object["config"], JSONSerialization.isValidJSONObject(config),
            let body = try? JSONSerialization.data(withJSONObject: config),
            let revision = (object["revision"] as? NSNumber)?.int64Value,
            let pattern = object["matchedPattern"] as? String
        else { return nil }
        self.body = body
        self.revision = revision
        self.matchedPattern = pattern
        self.refreshAfter = (object["refreshAfter"] as? NSNumber)?.intValue
        self.tier = (object["tier"] as? String).flatMap(SesameConfig.Tier.init(rawValue:))
        self.withheld = object["withheld"] as? [String] ?? []
        let rollout = object["rollout"] as? [String: Any]
        self.rollout = (rollout?["id"] as? String).flatMap { id in (rollout?["included"] as? Bool).map { SesameConfig.Rollout(id: id, included: $0) } }
    }
}

/// `Cache-Control`'s `max-age`, in seconds; nil without one.
func maxAge(_ cacheControl: String?) -> Int? {
    guard let cacheControl else { return nil }
    for directive in cacheControl.split(separator: ",") {
        let parts = directive.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
        if parts.count == 2, parts[0].lowercased() == "max-age", let seconds = Int(parts[1]) { return max(0, seconds) }
    }
    return nil
}

import Foundation

/// A config as saved between launches: what Sesame sent (a zero-knowledge config stays sealed) and
/// how long it may be used without asking again.
struct SavedConfig: Codable, Sendable {
    /// The `config` member exactly as Sesame sent it.
    var body: Data
    var etag: String?
    var revision: Int64
    var matchedPattern: String
    /// When Sesame last sent or confirmed it.
    var confirmedAt: Date
    /// Seconds after `confirmedAt` it counts as fresh (`Cache-Control: max-age`, `refreshAfter`).
    var freshFor: Int
    /// The tier it was served at (absent from configs saved before tiers existed: attested).
    var tier: SesameConfig.Tier?
    var withheld: [String]?
    /// Where a staged rollout placed the install (absent from configs saved before rollouts existed).
    var rollout: SesameConfig.Rollout?

    func isFresh(at now: Date) -> Bool { now < confirmedAt.addingTimeInterval(TimeInterval(freshFor)) }
    func age(at now: Date) -> Duration { .seconds(max(0, now.timeIntervalSince(confirmedAt))) }
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

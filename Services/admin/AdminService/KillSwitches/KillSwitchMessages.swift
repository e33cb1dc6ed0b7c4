import Foundation
import Hummingbird
import SesameDomain

/// `POST /v1/admin/kill-switch`: `enabled: false` switches the versions off.
struct KillSwitchRequest: Codable, Sendable {
    let versions: [String]
    let enabled: Bool
    let reason: String?
}

struct KillSwitchResponse: ChangeAnswer {
    let message: String
    let versions: [String]
    let enabled: Bool
}

/// `GET /v1/admin/kill-switch`.
typealias KilledVersionsResponse = Operations.listKillSwitches.Output.Ok.Body.jsonPayload

extension KilledVersionsResponse: ResponseEncodable {}

/// `POST /v1/admin/emergency-revoke`.
struct EmergencyRevokeRequest: Codable, Sendable {
    let version: String
    let forceRefreshTTL: Int?

    enum CodingKeys: String, CodingKey {
        case version
        case forceRefreshTTL = "force_refresh_ttl"
    }
}

struct EmergencyRevokeResponse: ChangeAnswer {
    let message: String
    let versionPattern: String
    let revokedBefore: Date
    let forceRefreshTTL: Int
}

/// `GET /v1/admin/emergency-revoke`.
struct RevocationsResponse: ResponseEncodable {
    let revocations: [Revocation]
}

import Foundation
import Hummingbird
import SesameDomain

/// `POST /v1/admin/config/upload`.
struct UploadRequest: Decodable {
    let version: String
    let config: JSONValue
    /// Which tier each top-level key needs; keys not named need `attested`.
    let tiers: ConfigTiers?
}

struct UploadResponse: ResponseEncodable {
    let message: String
    /// The tiers below `attested` the upload names (absent when the config is attested-only).
    let tiers: ConfigTiers?
    let pattern: String
    let revision: Int64
    let totalPatterns: Int
    let allPatterns: [String]
}

/// `GET /v1/admin/config`.
struct ManifestResponse: ResponseEncodable {
    let appId: String
    let patterns: [PatternState]
}

/// `DELETE /v1/admin/config`.
struct DeleteResponse: ResponseEncodable {
    let message: String
    let deleted: [String]
}

/// `GET /v1/admin/config/history`.
struct HistoryResponse: ResponseEncodable {
    let revisions: [RevisionInfo]
}

/// `POST /v1/admin/config/rollback`.
struct RollbackRequest: Decodable {
    let version: String
    let revision: Int64
}

struct RollbackResponse: ResponseEncodable {
    let message: String
    let pattern: String
    let revision: Int64
    let restoredFrom: Int64
}

/// `GET /v1/admin/config/resolve`.
struct ResolveResponse: ResponseEncodable {
    let requestedVersion: String
    /// `serve`, `disabled` (a kill switch: the app shows `reason`) or `revoked`.
    let outcome: String
    var matchedPattern: String?
    var revision: Int64?
    var zeroKnowledge: Bool?
    /// Seconds, while an emergency revocation's forced-refresh window runs.
    var refreshAfter: Int?
    var reason: String?
}

/// `GET /v1/admin/config/body`: a revision's config as stored (a zero-knowledge envelope as is).
struct ConfigBodyResponse: ResponseEncodable {
    let pattern: String
    let revision: Int64
    let zeroKnowledge: Bool
    let tiers: ConfigTiers?
    let config: JSONValue
}

/// `GET /v1/admin/config/diff`: what changed from one revision to another.
struct ConfigDiffResponse: ResponseEncodable {
    let pattern: String
    let from: Int64
    let to: Int64
    let changes: [JSONChange]
    /// Whether the per-key tiers differ too.
    let tiersChanged: Bool
}

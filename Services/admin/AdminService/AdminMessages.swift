import Foundation
import Hummingbird
import SesameDomain

/// `POST /v1/admin/keys/create`.
struct CreateKeyRequest: Decodable {
    let teamId: String
    let bundleId: String
    let keyName: String?
}

struct CreateKeyResponse: ResponseEncodable {
    let key: String
    let keyId: UUID
    let name: String
    let appId: String
    let message: String
}

/// `POST /v1/admin/keys/revoke`.
struct RevokeKeyRequest: Decodable {
    let key: String
}

struct RevokeKeyResponse: ResponseEncodable {
    let keyId: UUID
    let message: String
}

/// `POST /v1/admin/config/upload`.
struct UploadRequest: Decodable {
    let version: String
    let config: JSONValue
}

struct UploadResponse: ResponseEncodable {
    let message: String
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

/// `GET /v1/admin/audit`.
struct AuditResponse: ResponseEncodable {
    let entries: [AuditEntry]
    /// Pass as `after` for the next page; absent on the last page.
    let next: Int64?
}

/// `POST /v1/admin/kill-switch`: `enabled: false` switches the versions off.
struct KillSwitchRequest: Decodable {
    let versions: [String]
    let enabled: Bool
    let reason: String?
}

struct KillSwitchResponse: ResponseEncodable {
    let message: String
    let versions: [String]
    let enabled: Bool
}

/// `GET /v1/admin/kill-switch`.
struct KilledVersionsResponse: ResponseEncodable {
    let killed: [KilledVersion]
}

/// `POST /v1/admin/emergency-revoke`.
struct EmergencyRevokeRequest: Decodable {
    let version: String
    let forceRefreshTTL: Int?

    enum CodingKeys: String, CodingKey {
        case version
        case forceRefreshTTL = "force_refresh_ttl"
    }
}

struct EmergencyRevokeResponse: ResponseEncodable {
    let message: String
    let versionPattern: String
    let revokedBefore: Date
    let forceRefreshTTL: Int
}

/// `POST /v1/admin/blob/upload`.
struct BlobUploadRequest: Decodable {
    let blobKey: String
    let dataBase64: String
    let contentType: String?

    enum CodingKeys: String, CodingKey {
        case blobKey = "blob_key"
        case dataBase64 = "data_base64"
        case contentType = "content_type"
    }
}

struct BlobUploadResponse: ResponseEncodable {
    let message: String
    let blob: BlobInfo
}

/// `GET /v1/admin/blob`.
struct BlobListResponse: ResponseEncodable {
    let blobs: [BlobInfo]
}

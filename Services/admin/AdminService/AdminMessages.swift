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
    let matchedPattern: String
    let revision: Int64
    let zeroKnowledge: Bool
}

/// `GET /v1/admin/audit`.
struct AuditResponse: ResponseEncodable {
    let entries: [AuditEntry]
    /// Pass as `after` for the next page; absent on the last page.
    let next: Int64?
}

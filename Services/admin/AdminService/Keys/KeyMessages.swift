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

/// `POST /v1/admin/keys/revoke`: the key itself, or its id (as `GET /v1/admin/keys` lists it).
struct RevokeKeyRequest: Decodable {
    let key: String?
    let keyId: UUID?
}

struct RevokeKeyResponse: ResponseEncodable {
    let keyId: UUID
    let message: String
}

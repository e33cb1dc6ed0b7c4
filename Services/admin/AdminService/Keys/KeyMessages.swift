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
    @LowercaseUUID var keyId: UUID
    let name: String
    let appId: String
    var message: String
    /// Made while the app's two-person rule is on: the key is refused until a second person
    /// approves this proposal.
    var proposal: Proposal? = nil
}

/// An `access:key` proposal: the key made waiting for it.
struct PendingKey: Codable, Sendable {
    @LowercaseUUID var proposal: UUID
    @LowercaseUUID var keyId: UUID
    let name: String
}

/// What approving an access change answers.
struct AccessApproved: ChangeAnswer {
    let message: String
}

/// `POST /v1/admin/keys/revoke`: the key itself, or its id (as `GET /v1/admin/keys` lists it).
struct RevokeKeyRequest: Decodable {
    let key: String?
    let keyId: UUID?
}

struct RevokeKeyResponse: ResponseEncodable {
    @LowercaseUUID var keyId: UUID
    let message: String
}

import Hummingbird

// The blob routes' messages are the document's (generated into `Components` and `Operations`; see
// openapi-generator-config.yaml).

/// A stored blob's description (never its bytes).
typealias BlobInfo = Components.Schemas.BlobInfo
/// `POST /v1/admin/blob/upload`. Declared here, not generated: the document's `contentEncoding: base64`
/// makes the generator decode with OpenAPIRuntime's `Base64EncodedData`, which ignores characters
/// outside the alphabet; a corrupted upload must be refused, not stored as whatever remains.
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
/// What both uploads answer.
typealias BlobUploadResponse = Components.Schemas.BlobUpload
/// `GET /v1/admin/blob`.
typealias BlobListResponse = Operations.listBlobs.Output.Ok.Body.jsonPayload

extension BlobUploadResponse: ResponseEncodable {}
extension BlobListResponse: ResponseEncodable {}

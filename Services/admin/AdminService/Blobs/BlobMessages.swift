import Foundation
import Hummingbird
import SesameDomain

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

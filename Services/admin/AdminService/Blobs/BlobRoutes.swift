import Foundation
import Hummingbird
import NIOFoundationEssentialsCompat
import SesameHTTP

/// Under `blob`: `upload` (JSON, base64), `PUT {key}` (raw bytes, for large blobs) and `GET` (the list).
struct BlobRoutes {
    let authenticator: AdminAuthenticator
    let blobs: BlobStore
    let maxBlobBytes: Int

    func addRoutes(to group: RouterGroup<SesameRequestContext>) {
        group.post("upload") { request, context -> BlobUploadResponse in
            let (appID, caller) = try await authenticator.app(of: request)
            let body = try await request.decode(as: BlobUploadRequest.self, context: context)
            let key = try Self.validKey(body.blobKey)
            let contentType = try Self.validContentType(body.contentType)
            guard let data = Data(base64Encoded: body.dataBase64) else { throw APIError.invalidField("data_base64", "is not valid base64") }
            guard !data.isEmpty else { throw Self.emptyBlob }
            guard data.count <= maxBlobBytes else { throw Self.blobTooLarge(maxBlobBytes) }
            let info = try await blobs.put(appID: appID, key: key, contentType: contentType, data: ByteBuffer(data: data), caller: caller)
            return BlobUploadResponse(message: "Stored blob '\(key)' (\(info.sizeBytes) bytes).", blob: info)
        }

        group.put("{key}") { request, context -> BlobUploadResponse in
            let (appID, caller) = try await authenticator.app(of: request)
            let key = try Self.validKey(context.parameters.get("key") ?? "")
            let contentType = try Self.validContentType(request.headers[.contentType])
            // Collection stops at the limit the group declares (see AdminService.parts).
            let data = try await request.body.collect(upTo: maxBlobBytes)
            guard data.readableBytes > 0 else { throw Self.emptyBlob }
            let info = try await blobs.put(appID: appID, key: key, contentType: contentType, data: data, caller: caller)
            return BlobUploadResponse(message: "Stored blob '\(key)' (\(info.sizeBytes) bytes).", blob: info)
        }

        group.get() { request, _ -> BlobListResponse in
            let (appID, _) = try await authenticator.app(of: request)
            return BlobListResponse(blobs: try await blobs.list(appID: appID))
        }
    }

    static func blobTooLarge(_ limit: Int) -> APIError {
        APIError(.contentTooLarge, code: AdminErrorCode.blobTooLarge, message: "The blob is larger than \(limit) bytes (SESAME_MAX_BLOB_BYTES).")
    }

    /// A blob key: 1–200 of letters, digits, `.`, `_` and `-` (one path segment, no `..`).
    /// An empty upload is refused: it is a client's mistake (a `PUT` whose bytes were forgotten),
    /// and storing it would silently replace the blob apps download with nothing.
    static let emptyBlob = APIError.invalidRequest("The blob is empty: send its bytes.")

    static func validKey(_ key: String) throws -> String {
        let allowed = key.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x2E || byte == 0x5F
                || byte == 0x2D
        }
        guard (1...200).contains(key.utf8.count), allowed, !key.hasPrefix(".") else {
            throw APIError.invalidField("blob_key", "must be 1 to 200 letters, digits, '.', '_' or '-', not starting with '.'")
        }
        return key
    }

    /// `type/subtype` (parameters allowed), default `application/octet-stream`.
    static func validContentType(_ text: String?) throws -> String {
        guard let text, !text.isEmpty else { return "application/octet-stream" }
        let mediaType = text.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        let parts = mediaType.split(separator: "/", omittingEmptySubsequences: false)
        guard text.count <= 200, parts.count == 2, parts.allSatisfy({ !$0.isEmpty && !$0.contains(" ") }) else {
            throw APIError.invalidField("content_type", "must be a media type such as application/octet-stream")
        }
        return text
    }
}

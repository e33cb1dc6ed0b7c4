import Foundation
import HTTPTypes
import Hummingbird
import JWTKit
import Logging
import PostgresNIO
import SesameDomain
import SesameEncryption
import SesameHTTP
import SesameStorage
import SesameTokens

/// `GET /v1/blob/{key}` (with an access token) → a signed link valid for 5 minutes; `GET
/// /v1/blob/{key}/content?…` serves the bytes from PostgreSQL, opening only the sealed chunks the
/// requested range touches (`BlobLayout`), with `Range` support.
struct BlobRoutes: Sendable {
    let database: Database
    let encryption: EnvelopeEncryption
    let links: BlobLinks
    let gate: AccessGate
    let logger: Logger

    /// Adds `GET {key}` (a signed link) and `GET {key}/content` (the bytes) to the `v1/blob` group.
    func addRoutes(to group: RouterGroup<SesameRequestContext>) {
        group.get("{key}") { request, context in try await link(request, context: context) }
        group.get("{key}/content") { request, context in try await content(request, context: context) }
    }

    /// A stored blob's description.
    struct Stored: Sendable {
        let size: Int64
        let contentType: String
        let uploadID: UUID
        let sha256: [UInt8]
    }

    /// The link, and what the app checks the downloaded bytes against (the document's `BlobLink`).
    typealias LinkResponse = Components.Schemas.BlobLink

    func link(_ request: Request, context: SesameRequestContext) async throws -> LinkResponse {
        let claims = try await gate.admit(request, to: .blobs, context: context).claims
        let blobKey = context.parameters.get("key") ?? ""
        guard let stored = try await stored(appID: claims.appID, blobKey: blobKey) else { throw Self.notFound }
        let url = links.link(
            appID: claims.appID, blobKey: blobKey, tokenVersion: claims.appVersion, tokenIssuedAt: claims.issuedAt.value,
            subject: claims.subject.value, tier: claims.trustTier)
        return LinkResponse(
            url: url, expiresIn: Int(BlobLinks.lifetime), sizeBytes: stored.size, sha256: Hex.encode(stored.sha256),
            contentType: stored.contentType)
    }

    func content(_ request: Request, context: SesameRequestContext) async throws -> Response {
        try gate.limitClient(request, context: context)
        let query = request.uri.queryParameters
        guard let appID = query.get("app").map({ String($0) }), let expires = query.get("expires").flatMap({ Int64($0) }),
            let issuedAt = query.get("iat").flatMap({ Double($0) }), issuedAt.isFinite, let signature = query.get("sig").map({ String($0) }),
            let subject = query.get("sub").map({ String($0) }), let tier = query.get("tier").flatMap({ TrustTier(rawValue: String($0)) })
        else { throw Self.invalidLink }
        let grant = BlobLinks.Grant(
            appID: appID, blobKey: context.parameters.get("key") ?? "", expires: expires, tokenVersion: query.get("ver").map { String($0) },
            tokenIssuedAt: issuedAt, subject: subject, tier: tier)
        guard links.isValid(grant, signature: signature) else { throw Self.invalidLink }
        try gate.admit(link: grant)
        guard let stored = try await stored(appID: appID, blobKey: grant.blobKey) else { throw Self.notFound }
        let size = stored.size

        // The bytes are the developer's, not ours: never rendered or sniffed as a page on our origin.
        var headers: HTTPFields = [
            .contentType: stored.contentType, .acceptRanges: "bytes", .cacheControl: "private, max-age=300", .xContentTypeOptions: "nosniff",
            .contentDisposition: "attachment", .contentSecurityPolicy: "sandbox",
        ]
        var (start, end) = (Int64(0), size - 1)
        var status = HTTPResponse.Status.ok
        if let range = request.headers[.range] {
            guard let parsed = Self.parseRange(range, size: size) else {
                headers[.contentRange] = "bytes */\(size)"
                return Response(status: .rangeNotSatisfiable, headers: headers)
            }
            (start, end) = parsed
            status = .partialContent
            headers[.contentRange] = "bytes \(start)-\(end)/\(size)"
        }
        let (first, last, blobKey) = (start, end, grant.blobKey)
        let body = ResponseBody(contentLength: Int(Swift.max(0, last - first + 1))) { [self] writer in
            if last >= first {
                for index in BlobLayout.chunks(covering: first, last) {
                    // Each chunk is read and opened whole before it is written, so a slow reader
                    // never holds a database connection.
                    let chunk = try await open(chunk: index, of: stored, appID: appID, blobKey: blobKey)
                    let chunkStart = Int64(index) * Int64(BlobLayout.chunkBytes)
                    let from = Int(Swift.max(first, chunkStart) - chunkStart)
                    let to = Int(Swift.min(last, chunkStart + Int64(chunk.count) - 1) - chunkStart)
                    try await writer.write(ByteBuffer(bytes: chunk[from...to]))
                }
            }
            try await writer.finish(nil)
        }
        return Response(status: status, headers: headers, body: body)
    }

    /// A chunk that is not there or does not open as the blob's chunk at its place.
    struct UnreadableChunk: Error {
        let index: Int
    }

    static let invalidLink = APIError(.forbidden, code: DeliveryErrorCode.invalidLink, message: "The link is expired or altered; ask /v1/blob/{key} for a new one.")
    static let notFound = APIError(.notFound, code: DeliveryErrorCode.blobNotFound, message: "No blob with this key is stored for the app.")

    /// The blob, once its bytes are sealed (one stored in clear by an earlier version is sealed by admin at start).
    private func stored(appID: String, blobKey: String) async throws -> Stored? {
        let rows = try await database.client.query(
            """
            SELECT size_bytes, content_type, upload_id, sha256 FROM blobs
            WHERE app_id = \(appID) AND blob_key = \(blobKey) AND upload_id IS NOT NULL
            """,
            logger: logger)
        for try await (size, contentType, uploadID, sha256) in rows.decode((Int64, String, UUID, Data).self) {
            return Stored(size: size, contentType: contentType, uploadID: uploadID, sha256: Array(sha256))
        }
        return nil
    }

    /// Chunk `index` of `stored`, opened. A chunk missing, of another upload (the blob was replaced
    /// meanwhile), moved or altered fails: the response is cut short rather than wrong.
    private func open(chunk index: Int, of stored: Stored, appID: String, blobKey: String) async throws -> [UInt8] {
        let rows = try await database.client.query(
            "SELECT ciphertext FROM blob_chunks WHERE app_id = \(appID) AND blob_key = \(blobKey) AND chunk_index = \(index)",
            logger: logger)
        for try await sealed in rows.decode(ByteBuffer.self) {
            let chunk = try encryption.open(
                sealed.readableBytesView, context: SealingContext.blobChunk(appID: appID, uploadID: stored.uploadID, index: index))
            guard chunk.count == BlobLayout.chunkLength(index: index, size: stored.size) else { throw UnreadableChunk(index: index) }
            return chunk
        }
        throw UnreadableChunk(index: index)
    }

    /// One `bytes=a-b`, `bytes=a-` or `bytes=-n` range within `size`; nil when unsatisfiable.
    static func parseRange(_ header: String, size: Int64) -> (Int64, Int64)? {
        guard header.hasPrefix("bytes="), !header.contains(","), size > 0 else { return nil }
        let parts = header.dropFirst(6).split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        if parts[0].isEmpty {
            guard let suffix = Int64(parts[1]), suffix > 0 else { return nil }
            return (max(0, size - suffix), size - 1)
        }
        guard let first = Int64(parts[0]), first < size else { return nil }
        let last = parts[1].isEmpty ? size - 1 : min(Int64(parts[1]) ?? -1, size - 1)
        return last >= first ? (first, last) : nil
    }
}

extension BlobRoutes.LinkResponse: ResponseEncodable {}

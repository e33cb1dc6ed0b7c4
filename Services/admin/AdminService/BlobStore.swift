import Crypto
import Foundation
import Logging
import PostgresNIO
import SesameStorage

/// A stored blob's description (never its bytes).
struct BlobInfo: Codable, Sendable {
    let blobKey: String
    let contentType: String
    let sizeBytes: Int64
    let sha256: String
    let updatedAt: Date
}

/// Binary blobs (models, images) an attested app may download; uploading a key again replaces it.
struct BlobStore: Sendable {
    let database: Database
    let logger: Logger

    func put(appID: String, key: String, contentType: String, data: ByteBuffer, caller: Caller) async throws -> BlobInfo {
        let digest = SHA256.hash(data: data.readableBytesView).map { String(format: "%02x", $0) }.joined()
        let digestBytes = Data(SHA256.hash(data: data.readableBytesView))
        let size = Int64(data.readableBytes)
        return try await database.client.withTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                """
                INSERT INTO blobs (app_id, blob_key, content_type, size_bytes, sha256, data, created_by_key)
                VALUES (\(appID), \(key), \(contentType), \(size), \(digestBytes), \(data), \(caller.keyID))
                ON CONFLICT (app_id, blob_key) DO UPDATE SET content_type = EXCLUDED.content_type, size_bytes = EXCLUDED.size_bytes,
                    sha256 = EXCLUDED.sha256, data = EXCLUDED.data, created_by_key = EXCLUDED.created_by_key, updated_at = now()
                RETURNING updated_at
                """, logger: logger)
            var updatedAt = Date()
            for try await at in rows.decode(Date.self) { updatedAt = at }
            try await AuditLog.append(
                AuditEntry(
                    actor: caller.auditName, action: "blob.upload",
                    details: ["blobKey": .string(key), "sizeBytes": .integer(size), "sha256": .string(digest)]),
                appID: appID, on: connection, logger: logger)
            return BlobInfo(blobKey: key, contentType: contentType, sizeBytes: size, sha256: digest, updatedAt: updatedAt)
        }
    }

    func list(appID: String) async throws -> [BlobInfo] {
        let rows = try await database.client.query(
            "SELECT blob_key, content_type, size_bytes, sha256, updated_at FROM blobs WHERE app_id = \(appID) ORDER BY blob_key",
            logger: logger)
        var blobs: [BlobInfo] = []
        for try await (key, contentType, size, digest, updatedAt) in rows.decode((String, String, Int64, Data, Date).self) {
            blobs.append(
                BlobInfo(
                    blobKey: key, contentType: contentType, sizeBytes: size, sha256: digest.map { String(format: "%02x", $0) }.joined(),
                    updatedAt: updatedAt))
        }
        return blobs
    }
}

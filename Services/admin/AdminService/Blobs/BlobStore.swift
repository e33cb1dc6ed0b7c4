import Crypto
import Foundation
import Logging
import PostgresNIO
import SesameDomain
import SesameEncryption
import SesameJSON
import SesameStorage

/// Binary blobs (models, images) an attested app may download; uploading a key again replaces it.
/// The bytes are sealed at rest in chunks (`BlobLayout`); only their size and digest are in clear.
struct BlobStore: Sendable {
    let database: Database
    let encryption: EnvelopeEncryption
    let logger: Logger

    func put(appID: String, key: String, contentType: String, data: ByteBuffer, caller: Caller) async throws -> BlobInfo {
        let digestBytes = Data(SHA256.hash(data: data.readableBytesView))
        let digest = Hex.encode(digestBytes)
        let size = Int64(data.readableBytes)
        let uploadID = UUID()
        let chunks = try seal(data.readableBytesView, appID: appID, uploadID: uploadID)
        return try await database.client.withTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                """
                INSERT INTO blobs (app_id, blob_key, content_type, size_bytes, sha256, upload_id, created_by_key)
                VALUES (\(appID), \(key), \(contentType), \(size), \(digestBytes), \(uploadID), \(caller.keyID))
                ON CONFLICT (app_id, blob_key) DO UPDATE SET content_type = EXCLUDED.content_type, size_bytes = EXCLUDED.size_bytes,
                    sha256 = EXCLUDED.sha256, upload_id = EXCLUDED.upload_id, data = NULL, created_by_key = EXCLUDED.created_by_key,
                    updated_at = now()
                RETURNING updated_at
                """, logger: logger)
            var updatedAt = Date()
            for try await at in rows.decode(Date.self) { updatedAt = at }
            try await replaceChunks(with: chunks, appID: appID, blobKey: key, on: connection)
            try await AuditLog.append(
                AuditEntry(
                    actor: caller.auditName, action: .blobUpload,
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
                    blobKey: key, contentType: contentType, sizeBytes: size, sha256: Hex.encode(digest),
                    updatedAt: updatedAt))
        }
        return blobs
    }

    /// Seals the blobs stored before blob bytes were encrypted at rest (their bytes still in
    /// `blobs.data`), one per transaction; returns how many it sealed.
    func sealStoredInClear() async throws -> Int {
        var sealed = 0
        while true {
            let found = try await database.client.withTransaction(logger: logger) { connection in
                let rows = try await connection.query(
                    "SELECT app_id, blob_key, data FROM blobs WHERE data IS NOT NULL LIMIT 1 FOR UPDATE SKIP LOCKED", logger: logger)
                for try await (appID, key, data) in rows.decode((String, String, ByteBuffer).self) {
                    let uploadID = UUID()
                    let chunks = try seal(data.readableBytesView, appID: appID, uploadID: uploadID)
                    try await connection.query(
                        "UPDATE blobs SET upload_id = \(uploadID), data = NULL WHERE app_id = \(appID) AND blob_key = \(key)", logger: logger)
                    try await replaceChunks(with: chunks, appID: appID, blobKey: key, on: connection)
                    return true
                }
                return false
            }
            guard found else { return sealed }
            sealed += 1
        }
    }

    private func seal(_ bytes: ByteBufferView, appID: String, uploadID: UUID) throws -> [[UInt8]] {
        try (0..<BlobLayout.chunkCount(size: Int64(bytes.count))).map { index in
            let start = bytes.startIndex + index * BlobLayout.chunkBytes
            let end = min(start + BlobLayout.chunkBytes, bytes.endIndex)
            return try encryption.seal(bytes[start..<end], context: SealingContext.blobChunk(appID: appID, uploadID: uploadID, index: index))
        }
    }

    private func replaceChunks(with chunks: [[UInt8]], appID: String, blobKey: String, on connection: PostgresConnection) async throws {
        try await connection.query("DELETE FROM blob_chunks WHERE app_id = \(appID) AND blob_key = \(blobKey)", logger: logger)
        for (index, chunk) in chunks.enumerated() {
            try await connection.query(
                """
                INSERT INTO blob_chunks (app_id, blob_key, chunk_index, ciphertext)
                VALUES (\(appID), \(blobKey), \(index), \(ByteBuffer(bytes: chunk)))
                """, logger: logger)
        }
    }
}

extension Migrations {
    /// Blob bytes sealed at rest: `blob_chunks` holds each blob as sealed chunks (see `BlobLayout`),
    /// `blobs.upload_id` names the upload they belong to. Blobs stored before keep their bytes in
    /// `blobs.data` until admin seals them at start (`data` is then cleared).
    static let blobChunks = Migration(
        version: 4,
        name: "blob chunks",
        statements: [
            "ALTER TABLE blobs ADD COLUMN upload_id UUID",
            "ALTER TABLE blobs ALTER COLUMN data DROP NOT NULL",
            """
            CREATE TABLE blob_chunks (
                app_id       TEXT NOT NULL,
                blob_key     TEXT NOT NULL,
                chunk_index  INTEGER NOT NULL,
                ciphertext   BYTEA NOT NULL,
                PRIMARY KEY (app_id, blob_key, chunk_index),
                FOREIGN KEY (app_id, blob_key) REFERENCES blobs (app_id, blob_key) ON DELETE CASCADE
            )
            """,
        ]
    )
}

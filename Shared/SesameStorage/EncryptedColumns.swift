/// Every column that holds envelope ciphertext (see `SesameEncryption`), so master-key rotation can
/// re-wrap all of them. A migration that adds such a column adds it here too.
public enum EncryptedColumns {
    /// A table and one of its ciphertext columns.
    public struct Column: Sendable, Hashable {
        /// The table name.
        public let table: String
        /// The `BYTEA` column holding the ciphertext.
        public let column: String
    }

    /// All of them.
    public static let all: [Column] = [
        Column(table: "apple_credentials", column: "private_key_ciphertext"),
        Column(table: "attested_keys", column: "device_token_ciphertext"),
        Column(table: "blob_chunks", column: "ciphertext"),
        Column(table: "change_proposals", column: "request_sealed"),
        Column(table: "config_revisions", column: "body"),
        Column(table: "pin_signing_keys", column: "private_key_ciphertext"),
        Column(table: "relays", column: "headers_ciphertext"),
        Column(table: "service_keys", column: "key_ciphertext"),
        Column(table: "signing_keys", column: "private_key_ciphertext"),
        Column(table: "user_data", column: "body"),
        Column(table: "webhooks", column: "secret_ciphertext"),
    ]
}

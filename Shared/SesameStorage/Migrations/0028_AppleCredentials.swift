extension Migrations {
    /// Each app's DeviceCheck key (issue 59: Apple's fraud signals): sealed, write-only, with what
    /// Apple made of it the last time it was checked.
    static let appleCredentials = Migration(
        version: 28,
        name: "apple credentials",
        statements: [
            """
            CREATE TABLE apple_credentials (
                app_id                  TEXT PRIMARY KEY REFERENCES apps (app_id) ON DELETE CASCADE,
                key_id                  TEXT NOT NULL,
                private_key_ciphertext  BYTEA NOT NULL,
                set_by                  TEXT NOT NULL,
                set_at                  TIMESTAMPTZ NOT NULL DEFAULT now(),
                checked_at              TIMESTAMPTZ,
                check_outcome           TEXT,
                check_message           TEXT
            )
            """
        ]
    )
}

extension Migrations {
    /// Random keys a service needs to stay the same for ever (such as the one per-user data is
    /// found by), stored sealed under the master key so that rotating the master key keeps them.
    static let serviceKeys = Migration(
        version: 3,
        name: "service keys",
        statements: [
            """
            CREATE TABLE service_keys (
                name            TEXT PRIMARY KEY,
                key_ciphertext  BYTEA NOT NULL,
                created_at      TIMESTAMPTZ NOT NULL DEFAULT now()
            )
            """
        ]
    )
}

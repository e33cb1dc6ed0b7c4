extension Migrations {
    /// Backend keys: the credential an app's own backend presents to Sesame to consume single-use
    /// API tokens and check assertions, kept as a hash like provisioning keys but in a table of
    /// their own, so nothing that accepts a provisioning key can ever accept one. And the ids of
    /// consumed single-use tokens, each kept until its token expires.
    static let backendKeys = Migration(
        version: 14,
        name: "backend keys and consumed API tokens",
        statements: [
            """
            CREATE TABLE backend_keys (
                key_id        UUID PRIMARY KEY,
                app_id        TEXT NOT NULL REFERENCES apps (app_id),
                name          TEXT NOT NULL,
                key_hash      BYTEA NOT NULL UNIQUE,
                key_hint      TEXT NOT NULL,
                created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
                last_used_at  TIMESTAMPTZ,
                revoked_at    TIMESTAMPTZ
            )
            """,
            "CREATE INDEX backend_keys_app ON backend_keys (app_id)",
            """
            CREATE TABLE consumed_api_tokens (
                token_id     TEXT PRIMARY KEY,
                app_id       TEXT NOT NULL,
                consumed_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
                expires_at   TIMESTAMPTZ NOT NULL
            )
            """,
            "CREATE INDEX consumed_api_tokens_expiry ON consumed_api_tokens (expires_at)",
        ]
    )
}

extension Migrations {
    /// Trust tiers: `config_revisions.tiers` says which tier each top-level key needs (NULL: every
    /// key needs `attested`, as before), and `debug_tokens` holds the hashes of the debug tokens a
    /// provisioning key made, with their expiry, revocation and use.
    static let trustTiers = Migration(
        version: 5,
        name: "trust tiers",
        statements: [
            "ALTER TABLE config_revisions ADD COLUMN tiers JSONB",
            """
            CREATE TABLE debug_tokens (
                token_id        UUID PRIMARY KEY,
                app_id          TEXT NOT NULL REFERENCES apps (app_id),
                name            TEXT NOT NULL,
                token_hash      BYTEA NOT NULL UNIQUE,
                created_by_key  UUID REFERENCES provisioning_keys (key_id),
                created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
                expires_at      TIMESTAMPTZ NOT NULL,
                revoked_at      TIMESTAMPTZ,
                last_used_at    TIMESTAMPTZ,
                uses            BIGINT NOT NULL DEFAULT 0
            )
            """,
            // One live token per name, so a name in the audit log means one token.
            "CREATE UNIQUE INDEX debug_tokens_live_name ON debug_tokens (app_id, name) WHERE revoked_at IS NULL",
        ]
    )
}

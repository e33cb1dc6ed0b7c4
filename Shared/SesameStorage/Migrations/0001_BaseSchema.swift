extension Migrations {
    /// The base schema: apps and their provisioning keys, config revisions, attestation (challenges,
    /// attested keys, refresh-token families, signing keys), kill switches and revocations, blobs,
    /// per-user data, the outbox and the audit log. Secret columns hold envelope ciphertext (`BYTEA`).
    static let baseSchema = Migration(
        version: 1,
        name: "base schema",
        statements: [
            """
            CREATE TABLE apps (
                app_id        TEXT PRIMARY KEY,
                team_id       TEXT NOT NULL,
                bundle_id     TEXT NOT NULL,
                storage_id    BYTEA NOT NULL UNIQUE,
                policy        JSONB NOT NULL DEFAULT '{}'::jsonb,
                created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
                UNIQUE (team_id, bundle_id)
            )
            """,
            """
            CREATE TABLE provisioning_keys (
                key_id        UUID PRIMARY KEY,
                app_id        TEXT NOT NULL REFERENCES apps (app_id),
                name          TEXT NOT NULL,
                key_hash      BYTEA NOT NULL UNIQUE,
                key_hint      TEXT NOT NULL,
                created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
                revoked_at    TIMESTAMPTZ
            )
            """,
            "CREATE INDEX provisioning_keys_app ON provisioning_keys (app_id)",
            """
            CREATE TABLE config_revisions (
                id              BIGSERIAL PRIMARY KEY,
                app_id          TEXT NOT NULL REFERENCES apps (app_id),
                pattern         TEXT NOT NULL,
                revision        BIGINT NOT NULL,
                action          TEXT NOT NULL CHECK (action IN ('upload', 'delete', 'rollback')),
                body            BYTEA,
                zero_knowledge  BOOLEAN NOT NULL DEFAULT false,
                size_bytes      INTEGER NOT NULL DEFAULT 0,
                body_sha256     BYTEA,
                restored_from   BIGINT,
                created_by_key  UUID REFERENCES provisioning_keys (key_id),
                created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
                UNIQUE (app_id, pattern, revision)
            )
            """,
            """
            CREATE TABLE challenges (
                nonce_hash    BYTEA PRIMARY KEY,
                purpose       TEXT NOT NULL,
                created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
                expires_at    TIMESTAMPTZ NOT NULL
            )
            """,
            "CREATE INDEX challenges_expiry ON challenges (expires_at)",
            """
            CREATE TABLE attested_keys (
                key_id        BYTEA PRIMARY KEY,
                app_id        TEXT NOT NULL REFERENCES apps (app_id),
                public_key    BYTEA NOT NULL,
                receipt       BYTEA NOT NULL,
                counter       BIGINT NOT NULL,
                environment   TEXT NOT NULL CHECK (environment IN ('development', 'production')),
                created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
                last_used_at  TIMESTAMPTZ,
                revoked_at    TIMESTAMPTZ
            )
            """,
            "CREATE INDEX attested_keys_app ON attested_keys (app_id)",
            """
            CREATE TABLE refresh_token_families (
                family_id       UUID PRIMARY KEY,
                app_id          TEXT NOT NULL REFERENCES apps (app_id),
                key_id          BYTEA NOT NULL REFERENCES attested_keys (key_id),
                generation      BIGINT NOT NULL DEFAULT 0,
                created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
                expires_at      TIMESTAMPTZ NOT NULL,
                revoked_at      TIMESTAMPTZ,
                revoked_reason  TEXT
            )
            """,
            "CREATE INDEX refresh_token_families_key ON refresh_token_families (key_id)",
            """
            CREATE TABLE signing_keys (
                kid                     TEXT PRIMARY KEY,
                algorithm               TEXT NOT NULL,
                public_key              BYTEA NOT NULL,
                private_key_ciphertext  BYTEA NOT NULL,
                created_at              TIMESTAMPTZ NOT NULL DEFAULT now(),
                retired_at              TIMESTAMPTZ,
                verify_until            TIMESTAMPTZ
            )
            """,
            """
            CREATE TABLE kill_switches (
                app_id          TEXT NOT NULL REFERENCES apps (app_id),
                version         TEXT NOT NULL,
                reason          TEXT NOT NULL,
                created_by_key  UUID REFERENCES provisioning_keys (key_id),
                created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
                PRIMARY KEY (app_id, version)
            )
            """,
            """
            CREATE TABLE revocations (
                id                  BIGSERIAL PRIMARY KEY,
                app_id              TEXT NOT NULL REFERENCES apps (app_id),
                version_pattern     TEXT NOT NULL,
                issued_before       TIMESTAMPTZ NOT NULL,
                force_refresh_ttl   INTEGER NOT NULL DEFAULT 0,
                created_by_key      UUID REFERENCES provisioning_keys (key_id),
                created_at          TIMESTAMPTZ NOT NULL DEFAULT now()
            )
            """,
            "CREATE INDEX revocations_app ON revocations (app_id)",
            """
            CREATE TABLE blobs (
                app_id          TEXT NOT NULL REFERENCES apps (app_id),
                blob_key        TEXT NOT NULL,
                content_type    TEXT NOT NULL,
                size_bytes      BIGINT NOT NULL,
                sha256          BYTEA NOT NULL,
                data            BYTEA NOT NULL,
                created_by_key  UUID REFERENCES provisioning_keys (key_id),
                created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
                updated_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
                PRIMARY KEY (app_id, blob_key)
            )
            """,
            """
            CREATE TABLE user_data (
                app_id        TEXT NOT NULL REFERENCES apps (app_id),
                user_hash     BYTEA NOT NULL,
                body          BYTEA NOT NULL,
                version       BIGINT NOT NULL DEFAULT 1,
                updated_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
                PRIMARY KEY (app_id, user_hash)
            )
            """,
            """
            CREATE TABLE outbox (
                id            BIGSERIAL PRIMARY KEY,
                topic         TEXT NOT NULL,
                event_key     TEXT NOT NULL,
                payload       BYTEA NOT NULL,
                created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
                published_at  TIMESTAMPTZ
            )
            """,
            "CREATE INDEX outbox_unpublished ON outbox (id) WHERE published_at IS NULL",
            """
            CREATE TABLE audit_log (
                id          BIGSERIAL PRIMARY KEY,
                app_id      TEXT NOT NULL,
                at          TIMESTAMPTZ NOT NULL DEFAULT now(),
                actor       TEXT NOT NULL,
                action      TEXT NOT NULL,
                pattern     TEXT,
                revision    BIGINT,
                details     JSONB NOT NULL DEFAULT '{}'::jsonb
            )
            """,
            "CREATE INDEX audit_log_app ON audit_log (app_id, id)",
            // The audit log is append-only: the database itself refuses to change or remove an entry.
            """
            CREATE FUNCTION audit_log_is_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                RAISE EXCEPTION 'audit_log is append-only';
            END
            $$
            """,
            """
            CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON audit_log
                FOR EACH STATEMENT EXECUTE FUNCTION audit_log_is_append_only()
            """,
        ]
    )
}

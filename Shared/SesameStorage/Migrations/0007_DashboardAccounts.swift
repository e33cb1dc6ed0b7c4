extension Migrations {
    /// The dashboard's people: accounts with a role per app, the single-use invitations that create
    /// them, their passkeys, and their sessions. Invitation and session tokens are stored as
    /// SHA-256 only.
    static let dashboardAccounts = Migration(
        version: 7,
        name: "dashboard accounts",
        statements: [
            """
            CREATE TABLE accounts (
                account_id    UUID PRIMARY KEY,
                email         TEXT NOT NULL UNIQUE,
                created_at    TIMESTAMPTZ NOT NULL DEFAULT now()
            )
            """,
            """
            CREATE TABLE account_roles (
                account_id    UUID NOT NULL REFERENCES accounts (account_id),
                app_id        TEXT NOT NULL REFERENCES apps (app_id),
                role          TEXT NOT NULL CHECK (role IN ('owner', 'editor', 'viewer')),
                granted_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
                PRIMARY KEY (account_id, app_id)
            )
            """,
            """
            CREATE TABLE account_invitations (
                invitation_id  UUID PRIMARY KEY,
                token_hash     BYTEA NOT NULL UNIQUE,
                app_id         TEXT NOT NULL REFERENCES apps (app_id),
                email          TEXT NOT NULL,
                role           TEXT NOT NULL CHECK (role IN ('owner', 'editor', 'viewer')),
                invited_by     TEXT NOT NULL,
                created_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
                expires_at     TIMESTAMPTZ NOT NULL,
                used_at        TIMESTAMPTZ
            )
            """,
            """
            CREATE TABLE passkeys (
                credential_id  BYTEA PRIMARY KEY,
                account_id     UUID NOT NULL REFERENCES accounts (account_id),
                public_key     BYTEA NOT NULL,
                sign_count     BIGINT NOT NULL,
                created_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
                last_used_at   TIMESTAMPTZ
            )
            """,
            """
            CREATE TABLE dashboard_sessions (
                session_hash   BYTEA PRIMARY KEY,
                account_id     UUID NOT NULL REFERENCES accounts (account_id),
                created_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
                last_seen_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
                expires_at     TIMESTAMPTZ NOT NULL,
                revoked_at     TIMESTAMPTZ
            )
            """,
            "CREATE INDEX dashboard_sessions_account ON dashboard_sessions (account_id)",
        ]
    )
}

extension Migrations {
    /// An app's webhooks: HTTPS endpoints told of the app's changes. Each follows the app's audit
    /// log with a cursor (the last entry handled): entries of one app are written in id order
    /// under the audit chain's lock, so a cursor never skips one, and nothing is lost while an
    /// endpoint is down. The signing secret is sealed with the master key.
    static let webhooks = Migration(
        version: 20,
        name: "webhooks",
        statements: [
            """
            CREATE TABLE webhooks (
                webhook_id         UUID PRIMARY KEY,
                app_id             TEXT NOT NULL REFERENCES apps (app_id),
                url                TEXT NOT NULL,
                secret_ciphertext  BYTEA NOT NULL,
                events             TEXT[] NOT NULL,
                format             TEXT NOT NULL CHECK (format IN ('sesame', 'slack')),
                created_by         TEXT NOT NULL,
                created_at         TIMESTAMPTZ NOT NULL DEFAULT now(),
                cursor             BIGINT NOT NULL,
                attempts           INTEGER NOT NULL DEFAULT 0,
                next_attempt_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
                lease_until        TIMESTAMPTZ,
                last_status        INTEGER,
                last_error         TEXT,
                last_attempt_at    TIMESTAMPTZ,
                last_delivered_at  TIMESTAMPTZ,
                delivered          BIGINT NOT NULL DEFAULT 0
            )
            """,
            "CREATE INDEX webhooks_app ON webhooks (app_id)",
        ]
    )
}

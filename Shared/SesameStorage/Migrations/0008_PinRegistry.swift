extension Migrations {
    /// The signed SPKI pin registry: each app's pins, and its RSA signing keys (the private part
    /// sealed at rest): at most one `active` (it signs), at most one `pending` (made ahead, so apps
    /// can ship its public key before it signs), earlier ones `retired`.
    static let pinRegistry = Migration(
        version: 8,
        name: "pin registry",
        statements: [
            """
            CREATE TABLE pins (
                app_id        TEXT NOT NULL REFERENCES apps (app_id),
                domain_name   TEXT NOT NULL,
                spki_sha256   TEXT NOT NULL,
                fqdn          TEXT,
                expire        BIGINT,
                created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
                PRIMARY KEY (app_id, domain_name, spki_sha256)
            )
            """,
            """
            CREATE TABLE pin_signing_keys (
                key_id                  UUID PRIMARY KEY,
                app_id                  TEXT NOT NULL REFERENCES apps (app_id),
                public_key_der          BYTEA NOT NULL,
                private_key_ciphertext  BYTEA NOT NULL,
                state                   TEXT NOT NULL CHECK (state IN ('pending', 'active', 'retired')),
                created_at              TIMESTAMPTZ NOT NULL DEFAULT now(),
                activated_at            TIMESTAMPTZ,
                retired_at              TIMESTAMPTZ
            )
            """,
            "CREATE UNIQUE INDEX pin_signing_keys_active ON pin_signing_keys (app_id) WHERE state = 'active'",
            "CREATE UNIQUE INDEX pin_signing_keys_pending ON pin_signing_keys (app_id) WHERE state = 'pending'",
        ]
    )
}

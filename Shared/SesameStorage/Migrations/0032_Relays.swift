extension Migrations {
    /// Attested relays (issue 60): per app, by name, the upstream and the calls the app may make
    /// through it, the headers injected (names in clear, values sealed under the master key), the
    /// least tier and proof, the size and time limits and the quotas.
    static let relays = Migration(
        version: 32,
        name: "relays",
        statements: [
            """
            CREATE TABLE relays (
                app_id                 TEXT NOT NULL REFERENCES apps (app_id) ON DELETE CASCADE,
                name                   TEXT NOT NULL,
                upstream               TEXT NOT NULL,
                methods                TEXT[] NOT NULL,
                paths                  TEXT[] NOT NULL,
                header_names           TEXT[] NOT NULL,
                headers_ciphertext     BYTEA NOT NULL,
                least_tier             TEXT NOT NULL,
                proof                  TEXT NOT NULL,
                max_request_bytes      INTEGER NOT NULL,
                max_response_bytes     INTEGER NOT NULL,
                timeout_seconds        INTEGER NOT NULL,
                per_install_per_minute INTEGER,
                per_install_per_day    INTEGER,
                per_app_per_day        INTEGER,
                updated_by             TEXT NOT NULL,
                updated_at             TIMESTAMPTZ NOT NULL DEFAULT now(),
                PRIMARY KEY (app_id, name)
            )
            """
        ]
    )
}

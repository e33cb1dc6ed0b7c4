extension Migrations {
    /// The automatic attestation ramp (issue 59): how each app's attestations went, per hour (auth's
    /// verdicts and what SesameKit reported from the device), and where each automatic ramp stands.
    static let attestationRamp = Migration(
        version: 31,
        name: "attestation ramp",
        statements: [
            """
            CREATE TABLE attestation_outcomes (
                app_id        TEXT NOT NULL REFERENCES apps (app_id) ON DELETE CASCADE,
                hour          TIMESTAMPTZ NOT NULL,
                attested      BIGINT NOT NULL DEFAULT 0,
                refused       BIGINT NOT NULL DEFAULT 0,
                device_failed BIGINT NOT NULL DEFAULT 0,
                rate_limited  BIGINT NOT NULL DEFAULT 0,
                unsupported   BIGINT NOT NULL DEFAULT 0,
                outside_ramp  BIGINT NOT NULL DEFAULT 0,
                PRIMARY KEY (app_id, hour)
            )
            """,
            """
            CREATE TABLE attestation_ramps (
                app_id       TEXT PRIMARY KEY REFERENCES apps (app_id) ON DELETE CASCADE,
                percent      DOUBLE PRECISION NOT NULL,
                started_from DOUBLE PRECISION NOT NULL,
                widened_at   TIMESTAMPTZ NOT NULL,
                checked_at   TIMESTAMPTZ NOT NULL,
                hold_reason  TEXT
            )
            """,
        ]
    )
}

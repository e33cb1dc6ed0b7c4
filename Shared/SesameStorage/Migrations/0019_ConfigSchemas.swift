extension Migrations {
    /// JSON Schemas that configs must match before they are published: one for the whole app
    /// (`pattern` empty) and one per version pattern, each replaced in place (the audit log keeps
    /// the history of changes).
    static let configSchemas = Migration(
        version: 19,
        name: "config schemas",
        statements: [
            """
            CREATE TABLE config_schemas (
                app_id      TEXT NOT NULL REFERENCES apps (app_id),
                pattern     TEXT NOT NULL,
                schema      JSONB NOT NULL,
                updated_by  TEXT NOT NULL,
                updated_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
                PRIMARY KEY (app_id, pattern)
            )
            """,
        ]
    )
}

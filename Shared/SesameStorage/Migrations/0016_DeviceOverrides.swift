extension Migrations {
    /// Device overrides: one install (its token subject, the attested key id) gets a chosen
    /// revision of a pattern whatever is published or rolling out there, so a tester sees a config
    /// on their own phone before anyone else. A change is a change delivery serves: the
    /// `app_changes` trigger notes it.
    static let deviceOverrides = Migration(
        version: 16,
        name: "device overrides of config revisions",
        statements: [
            """
            CREATE TABLE config_overrides (
                app_id      TEXT NOT NULL REFERENCES apps (app_id),
                pattern     TEXT NOT NULL,
                install     TEXT NOT NULL,
                revision    BIGINT NOT NULL,
                label       TEXT NOT NULL,
                created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
                PRIMARY KEY (app_id, pattern, install),
                FOREIGN KEY (app_id, pattern, revision) REFERENCES config_revisions (app_id, pattern, revision)
            )
            """,
            """
            CREATE TRIGGER config_overrides_changed AFTER INSERT OR UPDATE OR DELETE ON config_overrides
                FOR EACH ROW EXECUTE FUNCTION app_changes_note()
            """,
        ]
    )
}

extension Migrations {
    /// Staged rollouts: a pattern's newest revision served to a share of its installs, the rest
    /// keeping `previous_revision` (NULL: the pattern served nothing before). At most one rollout
    /// per pattern is in flight (`active` or `paused`); it ends `completed` (everyone gets the
    /// revision) or `rolled_back` (everyone gets the previous config again, as a new revision).
    /// A change to a rollout is a change delivery serves: the `app_changes` trigger notes it.
    static let configRollouts = Migration(
        version: 15,
        name: "staged rollouts of config revisions",
        statements: [
            """
            CREATE TABLE config_rollouts (
                rollout_id         UUID PRIMARY KEY,
                app_id             TEXT NOT NULL REFERENCES apps (app_id),
                pattern            TEXT NOT NULL,
                revision           BIGINT NOT NULL,
                previous_revision  BIGINT,
                basis_points       INTEGER NOT NULL CHECK (basis_points BETWEEN 0 AND 10000),
                salt               TEXT NOT NULL,
                state              TEXT NOT NULL CHECK (state IN ('active', 'paused', 'completed', 'rolled_back')),
                created_at         TIMESTAMPTZ NOT NULL DEFAULT now(),
                updated_at         TIMESTAMPTZ NOT NULL DEFAULT now(),
                FOREIGN KEY (app_id, pattern, revision) REFERENCES config_revisions (app_id, pattern, revision),
                FOREIGN KEY (app_id, pattern, previous_revision) REFERENCES config_revisions (app_id, pattern, revision)
            )
            """,
            """
            CREATE UNIQUE INDEX config_rollouts_in_flight ON config_rollouts (app_id, pattern)
                WHERE state IN ('active', 'paused')
            """,
            """
            CREATE TRIGGER config_rollouts_changed AFTER INSERT OR UPDATE OR DELETE ON config_rollouts
                FOR EACH ROW EXECUTE FUNCTION app_changes_note()
            """,
        ]
    )
}

extension Migrations {
    /// Serving attested relays (issue 60):
    ///
    /// - A relay is something delivery serves: the `app_changes` trigger notes each change, so every
    ///   replica reloads the app's relays as it reloads its configs.
    /// - `relay_usage`: each quota window's calls, summed over the replicas. Each replica adds what it
    ///   admitted about once a second and reads the sums back (`RelayQuotas`); the subject is an
    ///   install's token subject, or empty for the app's own quota. Windows older than two days are
    ///   deleted.
    static let relayServing = Migration(
        version: 33,
        name: "relay serving",
        statements: [
            """
            CREATE TRIGGER relays_changed AFTER INSERT OR UPDATE OR DELETE ON relays
                FOR EACH ROW EXECUTE FUNCTION app_changes_note()
            """,
            """
            CREATE TABLE relay_usage (
                app_id        TEXT NOT NULL,
                relay         TEXT NOT NULL,
                subject       TEXT NOT NULL,
                window_kind   TEXT NOT NULL,
                window_start  TIMESTAMPTZ NOT NULL,
                calls         BIGINT NOT NULL,
                PRIMARY KEY (app_id, relay, subject, window_kind, window_start)
            )
            """,
            "CREATE INDEX relay_usage_window_start ON relay_usage (window_start)",
        ]
    )
}

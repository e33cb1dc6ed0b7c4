extension Migrations {
    /// What delivery reads, kept so that reading it costs what changed, not what was ever written.
    ///
    /// - `config_heads`: each pattern's newest revision, kept by a trigger on `config_revisions`, so
    ///   finding what to serve no longer scans the whole history.
    /// - `app_changes`: for each app, the transaction that last changed anything delivery serves
    ///   for it (configs, policy, kill switches, revocations, revoked devices, pins, pin signing
    ///   keys), kept by triggers on those tables, so no writer can forget it. A resync reads the
    ///   apps whose transaction is at or past the oldest one still running at its previous read
    ///   (`pg_snapshot_xmin`): a transaction that commits late is read at the next resync, never lost.
    static let deliveryChanges = Migration(
        version: 9,
        name: "config heads and app change watermarks",
        statements: [
            """
            CREATE TABLE config_heads (
                app_id          TEXT NOT NULL REFERENCES apps (app_id),
                pattern         TEXT NOT NULL,
                revision        BIGINT NOT NULL,
                action          TEXT NOT NULL,
                zero_knowledge  BOOLEAN NOT NULL,
                PRIMARY KEY (app_id, pattern)
            )
            """,
            """
            INSERT INTO config_heads (app_id, pattern, revision, action, zero_knowledge)
            SELECT DISTINCT ON (app_id, pattern) app_id, pattern, revision, action, zero_knowledge
            FROM config_revisions ORDER BY app_id, pattern, revision DESC
            """,
            """
            CREATE FUNCTION config_heads_follow() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO config_heads (app_id, pattern, revision, action, zero_knowledge)
                VALUES (NEW.app_id, NEW.pattern, NEW.revision, NEW.action, NEW.zero_knowledge)
                ON CONFLICT (app_id, pattern) DO UPDATE
                    SET revision = EXCLUDED.revision, action = EXCLUDED.action, zero_knowledge = EXCLUDED.zero_knowledge
                    WHERE config_heads.revision < EXCLUDED.revision;
                RETURN NULL;
            END
            $$
            """,
            """
            CREATE TRIGGER config_revisions_head AFTER INSERT ON config_revisions
                FOR EACH ROW EXECUTE FUNCTION config_heads_follow()
            """,
            """
            CREATE TABLE app_changes (
                app_id       TEXT PRIMARY KEY REFERENCES apps (app_id),
                changed_xid  xid8 NOT NULL
            )
            """,
            "CREATE INDEX app_changes_changed ON app_changes (changed_xid)",
            "INSERT INTO app_changes (app_id, changed_xid) SELECT app_id, pg_current_xact_id() FROM apps",
            """
            CREATE FUNCTION app_changes_note() RETURNS trigger LANGUAGE plpgsql AS $$
            DECLARE
                changed TEXT;
            BEGIN
                IF TG_OP = 'DELETE' THEN changed := OLD.app_id; ELSE changed := NEW.app_id; END IF;
                INSERT INTO app_changes (app_id, changed_xid) VALUES (changed, pg_current_xact_id())
                ON CONFLICT (app_id) DO UPDATE SET changed_xid = EXCLUDED.changed_xid;
                RETURN NULL;
            END
            $$
            """,
            """
            CREATE TRIGGER apps_changed AFTER INSERT OR UPDATE OF policy ON apps
                FOR EACH ROW EXECUTE FUNCTION app_changes_note()
            """,
            """
            CREATE TRIGGER config_revisions_changed AFTER INSERT ON config_revisions
                FOR EACH ROW EXECUTE FUNCTION app_changes_note()
            """,
            """
            CREATE TRIGGER kill_switches_changed AFTER INSERT OR UPDATE OR DELETE ON kill_switches
                FOR EACH ROW EXECUTE FUNCTION app_changes_note()
            """,
            """
            CREATE TRIGGER revocations_changed AFTER INSERT OR UPDATE OR DELETE ON revocations
                FOR EACH ROW EXECUTE FUNCTION app_changes_note()
            """,
            """
            CREATE TRIGGER pins_changed AFTER INSERT OR UPDATE OR DELETE ON pins
                FOR EACH ROW EXECUTE FUNCTION app_changes_note()
            """,
            """
            CREATE TRIGGER pin_signing_keys_changed AFTER INSERT OR UPDATE OR DELETE ON pin_signing_keys
                FOR EACH ROW EXECUTE FUNCTION app_changes_note()
            """,
            // Only a revocation changes what delivery serves; counters and last use do not.
            """
            CREATE TRIGGER attested_keys_revoked AFTER UPDATE OF revoked_at ON attested_keys
                FOR EACH ROW WHEN (OLD.revoked_at IS DISTINCT FROM NEW.revoked_at) EXECUTE FUNCTION app_changes_note()
            """,
        ]
    )
}

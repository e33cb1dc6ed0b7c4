extension Migrations {
    /// One source for "app X changed": the trigger that already notes every change delivery serves
    /// (`app_changes`, migration 9) also appends the `app.changed` event to the outbox, once per app
    /// and transaction, in the transaction that made the change. The services no longer append
    /// their own events for it, so a new writer cannot forget to, and the event carries only what
    /// delivery reads: the app id.
    ///
    /// The payload is the `EventCodec` layout (version 1), written here in SQL;
    /// `AppChangeEventTests` decodes what this writes with `EventCodec` and fails if they part.
    static let appChangeEvents = Migration(
        version: 13,
        name: "app changes announce themselves",
        statements: [
            """
            CREATE OR REPLACE FUNCTION app_changes_note() RETURNS trigger LANGUAGE plpgsql AS $$
            DECLARE
                changed TEXT;
                first_in_transaction BOOLEAN;
            BEGIN
                IF TG_OP = 'DELETE' THEN changed := OLD.app_id; ELSE changed := NEW.app_id; END IF;
                INSERT INTO app_changes AS noted (app_id, changed_xid) VALUES (changed, pg_current_xact_id())
                ON CONFLICT (app_id) DO UPDATE SET changed_xid = EXCLUDED.changed_xid
                    WHERE noted.changed_xid <> EXCLUDED.changed_xid
                RETURNING true INTO first_in_transaction;
                IF first_in_transaction THEN
                    INSERT INTO outbox (topic, event_key, payload) VALUES (
                        'sesame.config.published', changed,
                        convert_to(json_build_object(
                            'type', 'app.changed', 'version', 1, 'id', gen_random_uuid(), 'appId', changed,
                            'occurredAt', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                            'data', json_build_object())::text, 'UTF8'));
                END IF;
                RETURN NULL;
            END
            $$
            """,
        ]
    )
}

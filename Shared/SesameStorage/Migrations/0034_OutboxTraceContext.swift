extension Migrations {
    /// Traces across the outbox (issue 61): the W3C `traceparent` of the span whose transaction
    /// wrote an event, kept beside the row, so the relay's publish span continues that trace and
    /// hands it to Kafka's headers. A traced transaction sets `sesame.trace_parent` for itself
    /// (`set_config(…, true)`, `DatabaseClient`); the trigger copies it; an untraced one leaves
    /// the column empty. The trigger is migration 13's, with that one column more.
    static let outboxTraceContext = Migration(
        version: 34,
        name: "outbox trace context",
        statements: [
            "ALTER TABLE outbox ADD COLUMN trace_parent TEXT",
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
                    INSERT INTO outbox (topic, event_key, payload, trace_parent) VALUES (
                        'sesame.config.published', changed,
                        convert_to(json_build_object(
                            'type', 'app.changed', 'version', 1, 'id', gen_random_uuid(), 'appId', changed,
                            'occurredAt', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                            'data', json_build_object())::text, 'UTF8'),
                        NULLIF(current_setting('sesame.trace_parent', true), ''));
                END IF;
                RETURN NULL;
            END
            $$
            """,
        ]
    )
}

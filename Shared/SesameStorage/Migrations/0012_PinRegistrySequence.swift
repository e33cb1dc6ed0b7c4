extension Migrations {
    /// Each app's pin registry sequence (`apps.pins_sequence`): grows with every change of its
    /// pins or pin signing keys, kept by triggers so no writer can forget it. Delivery signs it
    /// into the registry, and SesameKit refuses a registry older than one it accepted.
    static let pinRegistrySequence = Migration(
        version: 12,
        name: "pin registry sequence",
        statements: [
            "ALTER TABLE apps ADD COLUMN pins_sequence BIGINT NOT NULL DEFAULT 0",
            """
            CREATE FUNCTION pins_sequence_bump() RETURNS trigger LANGUAGE plpgsql AS $$
            DECLARE
                changed TEXT;
            BEGIN
                IF TG_OP = 'DELETE' THEN changed := OLD.app_id; ELSE changed := NEW.app_id; END IF;
                UPDATE apps SET pins_sequence = pins_sequence + 1 WHERE app_id = changed;
                RETURN NULL;
            END
            $$
            """,
            """
            CREATE TRIGGER pins_sequence AFTER INSERT OR UPDATE OR DELETE ON pins
                FOR EACH ROW EXECUTE FUNCTION pins_sequence_bump()
            """,
            """
            CREATE TRIGGER pin_signing_keys_sequence AFTER INSERT OR UPDATE OR DELETE ON pin_signing_keys
                FOR EACH ROW EXECUTE FUNCTION pins_sequence_bump()
            """,
        ]
    )
}

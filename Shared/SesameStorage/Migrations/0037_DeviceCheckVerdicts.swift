extension Migrations {
    /// DeviceCheck verdicts owed and tokens spent. A device token counts for one key only (its
    /// SHA-256, unique per app), so one device's token cannot stand for another's ban; an attest
    /// admitted because Apple could not be asked is due for the check later (`device_check_due_at`,
    /// retried with `device_check_failures`), and its key revoked if the device turns out banned.
    static let deviceCheckVerdicts = Migration(
        version: 37,
        name: "device check verdicts",
        statements: [
            """
            ALTER TABLE attested_keys ADD COLUMN device_token_digest BYTEA, ADD COLUMN device_check_due_at TIMESTAMPTZ,
                ADD COLUMN device_check_failures INTEGER NOT NULL DEFAULT 0
            """,
            "CREATE UNIQUE INDEX attested_keys_device_token ON attested_keys (app_id, device_token_digest) WHERE device_token_digest IS NOT NULL",
            "CREATE INDEX attested_keys_device_check_due ON attested_keys (device_check_due_at) WHERE device_check_due_at IS NOT NULL",
        ]
    )
}

extension Migrations {
    /// Bans that survive a reinstall (issue 59): the DeviceCheck token each install sent with its
    /// attest (sealed: it names the device to Apple), and the devices an admin banned by setting the
    /// policy's DeviceCheck bit, so the ban can be listed and lifted.
    static let deviceBans = Migration(
        version: 29,
        name: "device bans",
        statements: [
            "ALTER TABLE attested_keys ADD COLUMN device_token_ciphertext BYTEA",
            """
            CREATE TABLE device_bans (
                app_id     TEXT NOT NULL REFERENCES apps (app_id) ON DELETE CASCADE,
                key_id     BYTEA NOT NULL,
                bit        SMALLINT NOT NULL CHECK (bit IN (0, 1)),
                reason     TEXT NOT NULL,
                banned_by  TEXT NOT NULL,
                banned_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
                PRIMARY KEY (app_id, key_id)
            )
            """,
        ]
    )
}

extension Migrations {
    /// What the management API shows of devices and keys: the app version an attested key last
    /// reported, why it was revoked, and when a provisioning key was last used.
    static let deviceAndKeyUse = Migration(
        version: 6,
        name: "device and key use",
        statements: [
            "ALTER TABLE attested_keys ADD COLUMN app_version TEXT",
            "ALTER TABLE attested_keys ADD COLUMN revoked_reason TEXT",
            "CREATE INDEX attested_keys_revoked ON attested_keys (revoked_at) WHERE revoked_at IS NOT NULL",
            "ALTER TABLE provisioning_keys ADD COLUMN last_used_at TIMESTAMPTZ",
        ]
    )
}

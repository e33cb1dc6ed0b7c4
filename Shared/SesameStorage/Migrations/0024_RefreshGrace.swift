extension Migrations {
    /// The refresh grace window: when each family last rotated (`rotated_at`), and which of its
    /// generations a grace rotation made (`grace_generation`), so a reply lost in flight costs the
    /// install one more rotation instead of its App Attest key, and only once.
    static let refreshGrace = Migration(
        version: 24,
        name: "refresh-token grace window",
        statements: [
            "ALTER TABLE refresh_token_families ADD COLUMN rotated_at TIMESTAMPTZ",
            "ALTER TABLE refresh_token_families ADD COLUMN grace_generation BIGINT",
        ]
    )
}

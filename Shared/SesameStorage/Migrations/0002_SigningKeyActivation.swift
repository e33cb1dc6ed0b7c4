extension Migrations {
    /// Signing keys get an activation time, so a new key can be published in the JWKS before it
    /// signs anything (verifiers that cache the JWKS learn it first). Existing keys activated when
    /// they were created.
    static let signingKeyActivation = Migration(
        version: 2,
        name: "signing key activation",
        statements: [
            "ALTER TABLE signing_keys ADD COLUMN activates_at TIMESTAMPTZ",
            "UPDATE signing_keys SET activates_at = created_at",
            "ALTER TABLE signing_keys ALTER COLUMN activates_at SET NOT NULL, ALTER COLUMN activates_at SET DEFAULT now()",
        ]
    )
}

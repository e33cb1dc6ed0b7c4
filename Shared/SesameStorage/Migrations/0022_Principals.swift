extension Migrations {
    /// Who stands behind each credential, for the two-person rule: a key's `principal` is the
    /// person or root key it descends from (a key made by a key is its maker's principal; a key
    /// made by a person is that person's; a key the operator made is its own), `created_by` who
    /// made it. A key or invitation made while the rule is on waits for a second principal
    /// (`pending_proposal`) and is refused until approved. A proposal keeps its proposer's principal.
    static let principals = Migration(
        version: 22,
        name: "principals behind keys and invitations",
        statements: [
            "ALTER TABLE provisioning_keys ADD COLUMN created_by TEXT",
            "ALTER TABLE provisioning_keys ADD COLUMN principal TEXT",
            "UPDATE provisioning_keys SET principal = 'key:' || key_id::text",
            "ALTER TABLE provisioning_keys ALTER COLUMN principal SET NOT NULL",
            "ALTER TABLE provisioning_keys ADD COLUMN pending_proposal UUID",
            "ALTER TABLE account_invitations ADD COLUMN pending_proposal UUID",
            "ALTER TABLE change_proposals ADD COLUMN proposer_principal TEXT",
        ]
    )
}

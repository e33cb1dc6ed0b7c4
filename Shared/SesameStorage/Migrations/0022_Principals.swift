extension Migrations {
    /// Who stands behind each credential, for the two-person rule: a key's `principal` is the
    /// person or root key it descends from (a key made by a key is its maker's principal; a key
    /// made by a person is that person's; a key the operator made is its own), `created_by` who
    /// made it. A key or invitation made while the rule is on waits for a second principal
    /// (`pending_proposal`) and is refused until approved. A proposal keeps its proposer's principal.
    ///
    /// A proposal's request (a publish's holds the config's values) is kept sealed under the master
    /// key (`request_sealed`), and only until the proposal is decided or expires; its SHA-256 stays.
    /// Requests of proposals already decided are dropped here; pending ones written before stay as
    /// they are until decided.
    static let principals = Migration(
        version: 22,
        name: "principals behind keys and invitations, sealed proposals and audit entries",
        statements: [
            "ALTER TABLE provisioning_keys ADD COLUMN created_by TEXT",
            "ALTER TABLE provisioning_keys ADD COLUMN principal TEXT",
            "UPDATE provisioning_keys SET principal = 'key:' || key_id::text",
            "ALTER TABLE provisioning_keys ALTER COLUMN principal SET NOT NULL",
            "ALTER TABLE provisioning_keys ADD COLUMN pending_proposal UUID",
            "ALTER TABLE account_invitations ADD COLUMN pending_proposal UUID",
            "ALTER TABLE change_proposals ADD COLUMN proposer_principal TEXT",
            // An entry's HMAC under a key derived from the master key (`AuditSeal`).
            "ALTER TABLE audit_log ADD COLUMN entry_seal BYTEA",
            "ALTER TABLE change_proposals ADD COLUMN request_sealed BYTEA",
            "ALTER TABLE change_proposals ADD COLUMN request_sha256 BYTEA",
            "UPDATE change_proposals SET request_sha256 = sha256(convert_to(request, 'UTF8'))",
            "ALTER TABLE change_proposals ALTER COLUMN request DROP NOT NULL",
            "UPDATE change_proposals SET request = NULL WHERE state <> 'pending' OR expires_at < now()",
        ]
    )
}

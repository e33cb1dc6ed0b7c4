extension Migrations {
    /// Who made each backend key and debug token, as the audit log names them (`account:EMAIL`,
    /// `key:ID`, `operator`), so removing a person can revoke what they made on the dashboard too.
    /// Debug tokens a key made already said which (`created_by_key`); older backend keys say nothing.
    static let credentialMakers = Migration(
        version: 27,
        name: "credential makers",
        statements: [
            "ALTER TABLE backend_keys ADD COLUMN created_by TEXT",
            "ALTER TABLE debug_tokens ADD COLUMN created_by TEXT",
            "UPDATE debug_tokens SET created_by = 'key:' || created_by_key::text WHERE created_by_key IS NOT NULL",
        ]
    )
}

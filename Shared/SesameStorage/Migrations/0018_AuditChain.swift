extension Migrations {
    /// The audit log as a hash chain per app (`AuditChain`): each entry keeps the previous entry's
    /// hash and its own. Entries written before this migration keep neither and are reported as
    /// predating the chain; every entry after them must carry both.
    static let auditChain = Migration(
        version: 18,
        name: "tamper-evident audit chain",
        statements: [
            """
            ALTER TABLE audit_log
                ADD COLUMN previous_hash BYTEA,
                ADD COLUMN entry_hash BYTEA,
                ADD CONSTRAINT audit_log_chained_whole CHECK ((previous_hash IS NULL) = (entry_hash IS NULL))
            """,
        ]
    )
}

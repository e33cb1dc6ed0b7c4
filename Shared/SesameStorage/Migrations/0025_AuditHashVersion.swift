extension Migrations {
    /// Each audit entry records how its hash was made (`AuditChain.HashVersion`): the entries
    /// written before are version 1, and so is an entry that does not say (a writer of an earlier
    /// version during a rolling upgrade); this version's writers say 2 (RFC 8785 details).
    static let auditHashVersion = Migration(
        version: 25,
        name: "audit hash version",
        statements: [
            "ALTER TABLE audit_log ADD COLUMN hash_version SMALLINT NOT NULL DEFAULT 1",
        ]
    )
}

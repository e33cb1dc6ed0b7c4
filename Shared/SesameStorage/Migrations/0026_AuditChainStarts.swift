extension Migrations {
    /// Where each app's audit chain began (`AuditChain.ChainStart`): its first hashed entry. Without
    /// it, a log whose every hash was stripped would read as one written before the chain existed.
    /// Apps whose entries all predate the chain get their record with their next entry. Rows are
    /// never changed or removed, like the log's own.
    static let auditChainStarts = Migration(
        version: 26,
        name: "audit chain starts",
        statements: [
            "CREATE TABLE audit_chain_starts (app_id TEXT PRIMARY KEY, first_id BIGINT NOT NULL, recorded_at TIMESTAMPTZ NOT NULL DEFAULT now())",
            "INSERT INTO audit_chain_starts (app_id, first_id) SELECT app_id, min(id) FROM audit_log WHERE entry_hash IS NOT NULL GROUP BY app_id",
            """
            CREATE FUNCTION audit_chain_starts_are_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                RAISE EXCEPTION 'audit_chain_starts is append-only';
            END $$
            """,
            """
            CREATE TRIGGER audit_chain_starts_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON audit_chain_starts
                FOR EACH STATEMENT EXECUTE FUNCTION audit_chain_starts_are_append_only()
            """,
        ]
    )
}

extension Migrations {
    /// A debug token's revocation changes what delivery serves (the access tokens it earned are
    /// refused), so it notes the app as changed, as a device's revocation does.
    static let debugTokenRevocations = Migration(
        version: 11,
        name: "debug token revocations reach delivery",
        statements: [
            """
            CREATE TRIGGER debug_tokens_revoked AFTER UPDATE OF revoked_at ON debug_tokens
                FOR EACH ROW WHEN (OLD.revoked_at IS DISTINCT FROM NEW.revoked_at) EXECUTE FUNCTION app_changes_note()
            """,
        ]
    )
}

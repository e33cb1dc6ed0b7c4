extension Migrations {
    /// A backend key may be bound to one of the app's API audiences: it then consumes only tokens
    /// issued for that audience, so a token sent to one of the app's APIs cannot be redeemed by
    /// another's backend. Keys made before stay unbound.
    static let backendKeyAudiences = Migration(
        version: 23,
        name: "backend keys bound to an audience",
        statements: [
            "ALTER TABLE backend_keys ADD COLUMN audience TEXT"
        ]
    )
}

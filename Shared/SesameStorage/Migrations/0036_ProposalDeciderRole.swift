extension Migrations {
    /// The least role of a person who may approve or reject a proposal: the role its own route
    /// needs on the dashboard (an owner's device revocation or relay is decided by an owner, never an
    /// editor). NULL for proposals made before it was recorded (an editor's, or an owner's for the
    /// policy and who may act, as before).
    static let proposalDeciderRole = Migration(
        version: 36,
        name: "proposal decider role",
        statements: [
            "ALTER TABLE change_proposals ADD COLUMN decider_role TEXT"
        ]
    )
}

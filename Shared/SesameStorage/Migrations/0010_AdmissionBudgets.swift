extension Migrations {
    /// Per-app admission budgets every auth replica shares (`AdmissionBudget`): when each app's
    /// next admission for a purpose is due.
    static let admissionBudgets = Migration(
        version: 10,
        name: "shared admission budgets",
        statements: [
            """
            CREATE TABLE admission_budgets (
                app_id               TEXT NOT NULL REFERENCES apps (app_id),
                purpose              TEXT NOT NULL,
                theoretical_arrival  TIMESTAMPTZ NOT NULL,
                PRIMARY KEY (app_id, purpose)
            )
            """,
        ]
    )
}

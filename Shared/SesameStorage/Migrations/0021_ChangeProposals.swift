extension Migrations {
    /// Changes waiting for a second person (the two-person rule an app's policy may set): the
    /// request exactly as it was made, what it was made against (`base`: a changed base makes it
    /// stale), who proposed it, until when it may be approved, and how it ended.
    static let changeProposals = Migration(
        version: 21,
        name: "changes waiting for approval",
        statements: [
            """
            CREATE TABLE change_proposals (
                proposal_id  UUID PRIMARY KEY,
                app_id       TEXT NOT NULL REFERENCES apps (app_id),
                kind         TEXT NOT NULL,
                request      TEXT NOT NULL,
                summary      TEXT NOT NULL,
                base         TEXT,
                proposer     TEXT NOT NULL,
                state        TEXT NOT NULL CHECK (state IN ('pending', 'applying', 'applied', 'rejected', 'failed')),
                created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
                expires_at   TIMESTAMPTZ NOT NULL,
                decided_by   TEXT,
                decided_at   TIMESTAMPTZ,
                outcome      TEXT
            )
            """,
            "CREATE INDEX change_proposals_app ON change_proposals (app_id, created_at)",
        ]
    )
}

extension Migrations {
    /// How many distinct installs each side of a rollout reached: each delivery replica keeps a
    /// `DistinctCount` sketch per rollout and side and writes it here now and then; readers merge
    /// the replicas' sketches (register by register, the larger), so an install seen by two
    /// replicas counts once.
    static let rolloutInstalls = Migration(
        version: 17,
        name: "distinct installs per rollout side",
        statements: [
            """
            CREATE TABLE rollout_installs (
                rollout_id  UUID NOT NULL REFERENCES config_rollouts (rollout_id),
                included    BOOLEAN NOT NULL,
                replica     UUID NOT NULL,
                registers   BYTEA NOT NULL,
                updated_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
                PRIMARY KEY (rollout_id, included, replica)
            )
            """,
        ]
    )
}

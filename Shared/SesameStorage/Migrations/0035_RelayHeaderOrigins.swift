extension Migrations {
    /// A relay's injected headers are sealed bound to the upstream's origin (security round 4):
    /// `headers_origin` names the origin they were sealed for, or is NULL for headers sealed before
    /// (bound to the relay's name only). Admin seals such rows again, bound to their upstream's
    /// origin, at its start (`RelayStore.bindUnboundHeaders`); until then delivery serves them as
    /// unusable.
    /// The column is what admin shows and compares; delivery never trusts it: it opens the headers
    /// with the origin of the row's upstream, so a row moved by a write cannot open them.
    static let relayHeaderOrigins = Migration(
        version: 35,
        name: "relay header origins",
        statements: [
            "ALTER TABLE relays ADD COLUMN headers_origin TEXT"
        ]
    )
}

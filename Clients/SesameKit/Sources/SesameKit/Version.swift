extension SesameClient {
    /// This SesameKit's version: the newest release in `Clients/SesameKit/CHANGELOG.md`, and the
    /// tag an app's `Package.swift` resolves with `from:`.
    public static let version = "0.9.0"
}

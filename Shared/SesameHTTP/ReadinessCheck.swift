/// One dependency `/health/ready` asks about, e.g. PostgreSQL.
public struct ReadinessCheck: Sendable {
    /// The name shown in the readiness body, e.g. `postgres`.
    public let name: String
    /// Answers whether the dependency is usable now; must return within a few seconds.
    public let isReady: @Sendable () async -> Bool

    /// Creates a check.
    public init(name: String, isReady: @escaping @Sendable () async -> Bool) {
        self.name = name
        self.isReady = isReady
    }
}

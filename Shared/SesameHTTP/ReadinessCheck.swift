/// One dependency `/health/ready` asks about, e.g. PostgreSQL.
public struct ReadinessCheck: Sendable {
    /// What a failing check means for the instance.
    public enum Impact: Sendable {
        /// The instance cannot do its work: readiness answers 503 and a balancer takes it out.
        case required
        /// The instance still serves, from what it has: readiness answers 200 with `degraded`.
        case degrading
    }

    /// The name shown in the readiness body, e.g. `postgres`.
    public let name: String
    /// What it means when this check fails.
    public let impact: Impact
    /// Answers whether the dependency is usable now; must return within a few seconds.
    public let isReady: @Sendable () async -> Bool
    /// What an operator should know about a failing check, e.g. which apps; nil for nothing more.
    /// Given only to callers on the service's own port.
    public let detail: @Sendable () -> String?
    /// What anyone may know of it, e.g. how many apps: given to callers through the gateway.
    public let publicDetail: @Sendable () -> String?

    /// Creates a check.
    public init(
        name: String, impact: Impact = .required, detail: @escaping @Sendable () -> String? = { nil },
        publicDetail: @escaping @Sendable () -> String? = { nil }, isReady: @escaping @Sendable () async -> Bool
    ) {
        self.name = name
        self.impact = impact
        self.detail = detail
        self.publicDetail = publicDetail
        self.isReady = isReady
    }
}

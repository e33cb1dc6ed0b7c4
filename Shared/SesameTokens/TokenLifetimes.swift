/// How long tokens live, and how long a retired signing key keeps verifying.
public struct TokenLifetimes: Sendable, Equatable {
    /// Access token lifetime (default 15 minutes).
    public var access: Duration
    /// Refresh token lifetime (default 30 days); each refresh starts a new one.
    public var refresh: Duration

    public init(access: Duration = .seconds(15 * 60), refresh: Duration = .seconds(30 * 24 * 3600)) {
        self.access = access
        self.refresh = refresh
    }

    /// A retired signing key verifies until every token it signed has expired.
    public var retiredKeyVerification: Duration { max(access, refresh) }
}

extension Duration {
    /// The duration in whole seconds, as PostgreSQL intervals and JWT claims use them.
    var wholeSeconds: Int64 { components.seconds }
}

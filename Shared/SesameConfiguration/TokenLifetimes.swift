/// How long tokens live, how often the key that signs them changes, and how long a retired key
/// keeps verifying.
public struct TokenLifetimes: Sendable, Equatable {
    /// Access token lifetime (`SESAME_ACCESS_TOKEN_TTL`, default 15 minutes).
    public var access: Duration
    /// Refresh token lifetime (`SESAME_REFRESH_TOKEN_TTL`, default 30 days); each refresh starts a new one.
    public var refresh: Duration
    /// How long a signing key signs before a new one replaces it (`SESAME_SIGNING_KEY_ROTATION`, default 30 days).
    public var signingKeyRotation: Duration

    public init(
        access: Duration = .seconds(15 * 60), refresh: Duration = .seconds(30 * 24 * 3600),
        signingKeyRotation: Duration = .seconds(30 * 24 * 3600)
    ) {
        self.access = access
        self.refresh = refresh
        self.signingKeyRotation = signingKeyRotation
    }

    /// A retired signing key verifies until every token it signed has expired.
    public var retiredKeyVerification: Duration { max(access, refresh) }
}

import HummingbirdTesting

/// How a test reaches the service it runs. The live test client sends one request after another
/// on one connection, so "parallel" requests through it reach the service in a queue; the tests
/// of races (one nonce, one refresh token, one document version, one pattern) use AsyncHTTPClient's
/// pool instead, whose requests run at once on up to eight connections.
public enum TestConnections: Sendable {
    /// One keep-alive connection.
    case one
    /// Up to eight connections at once.
    case many

    /// The Hummingbird testing setup for it.
    public var setup: TestingSetup {
        switch self {
        case .one: .live
        case .many: .ahc(.http)
        }
    }
}

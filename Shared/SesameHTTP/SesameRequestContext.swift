import Hummingbird

/// The request context every Sesame service uses: Hummingbird's core storage plus a per-request
/// body limit that `RequestLimitsMiddleware` (or a route) sets.
public struct SesameRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The largest body this request may carry, in bytes; enforced by `request.decode` and body collection.
    public var maxUploadSize: Int
    /// The peer's IP address (the gateway's, behind one: see `ClientAddress`).
    public let remoteAddress: String?

    public init(source: Source) {
        self.coreContext = .init(source: source)
        self.maxUploadSize = 1 << 20
        self.remoteAddress = source.channel.remoteAddress?.ipAddress
    }
}

import Foundation
import Hummingbird
import NIOCore

/// The request context every Sesame service uses: Hummingbird's core storage plus a per-request
/// body limit that `RequestLimitsMiddleware` (or a route) sets.
public struct SesameRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The largest body this request may carry, in bytes; enforced by `request.decode` and body collection.
    public var maxUploadSize: Int
    /// The peer's IP address (the gateway's, behind one: see `ClientAddress`).
    public let remoteAddress: String?
    /// The request's connection: for a response that must end it (a write the client stopped
    /// reading, past its deadline).
    public let connection: any Channel

    /// JSON request bodies decode as usual, except that text with a NUL is refused (`NulCharacterGuard`).
    public var requestDecoder: SesameJSONRequestDecoder { SesameJSONRequestDecoder() }

    /// JSON responses write dates as ISO 8601 (`2026-11-22T21:04:11Z`), not Foundation's default.
    public var responseEncoder: JSONEncoder { Self.responseEncoder }

    /// One for every response: encoding keeps no state between calls, and its options never change.
    private static let responseEncoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }()

    public init(source: Source) {
        self.coreContext = .init(source: source)
        self.maxUploadSize = 1 << 20
        self.remoteAddress = source.channel.remoteAddress?.ipAddress
        self.connection = source.channel
    }
}

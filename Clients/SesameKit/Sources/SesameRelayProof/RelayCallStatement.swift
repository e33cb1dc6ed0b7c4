import Crypto
import Foundation

/// What a relay call's proof vouches for (docs/relay.md): the call's method, relay, path, query and
/// body, written the same way by SesameKit, which proves it, and by delivery, which checks it.
///
/// An App Attest assertion is made over `clientData`; a single-use API token is minted for
/// `audience(relay:)` and bound to `clientData` (its `bnd` is `binding`). The prefix keeps either
/// from passing anywhere else: an assertion or token made for the app's own backend does not
/// state a relay call, and one made for a relay call states nothing a backend reads.
public struct RelayCallStatement: Sendable, Equatable {
    /// The statement's first line; a later format takes another.
    public static let prefix = "sesame-relay-v1"
    /// The audience prefix of single-use tokens minted for relay calls: auth mints them for any
    /// relay of the app (no policy lists them) and a backend never accepts one.
    public static let audiencePrefix = "sesame-relay:"

    public let method: String
    public let relay: String
    /// The path after `/v1/relay/{relay}`, percent-encoded as sent ("" or starting with `/`).
    public let path: String
    /// The query as sent, percent-encoded, without its `?`; nil when the URL has none.
    public let query: String?
    /// The SHA-256 of the body (of no bytes when there is none).
    public let bodyDigest: SHA256.Digest

    public init(method: String, relay: String, path: String, query: String?, body: some DataProtocol) {
        self.method = method.uppercased()
        self.relay = relay
        self.path = path
        self.query = query
        self.bodyDigest = SHA256.hash(data: body)
    }

    /// The bytes an assertion signs and a single-use token is bound to: one line each for the
    /// prefix, method, relay, path, `?query` (empty when there is none, so an empty query differs)
    /// and the body's base64url SHA-256. No field can hold a line break (a request line cannot).
    public var clientData: Data {
        let lines = [Self.prefix, method, relay, path, query.map { "?" + $0 } ?? "", Self.base64URL(Data(bodyDigest))]
        return Data(lines.joined(separator: "\n").utf8)
    }

    /// A single-use token's binding to this call: the base64url SHA-256 of `clientData`, as
    /// SesameKit's `limitedUseToken(boundTo:)` writes it.
    public var binding: String { Self.base64URL(Data(SHA256.hash(data: clientData))) }

    /// The audience of a single-use token for calls to `relay`.
    public static func audience(relay: String) -> String { audiencePrefix + relay }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

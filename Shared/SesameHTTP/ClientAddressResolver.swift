import Foundation
import HTTPTypes
import Hummingbird
import SesameConfiguration

/// Finds the address of the client a request came from, for per-client limits.
///
/// `X-Forwarded-For` is believed only as far as it was written by trusted proxies: when the peer
/// is one of them, the entries are read from the right (each proxy appends the address it saw) and
/// the first one that is not a trusted proxy is the client. Anything further left is the client's
/// own claim. With no trusted proxies configured the header is ignored, so a client cannot dodge
/// its limit by inventing addresses.
public struct ClientAddressResolver: Sendable {
    private let trustedProxies: [IPAddressRange]

    /// - Parameter trustedProxies: the gateways in front of the service (`SESAME_TRUSTED_PROXIES`).
    public init(trustedProxies: [IPAddressRange]) {
        self.trustedProxies = trustedProxies
    }

    /// The client's address as far as it can be trusted.
    public func address(of request: Request, context: SesameRequestContext) -> String {
        address(peer: context.remoteAddress, forwardedFor: request.headers[values: .xForwardedFor])
    }

    /// The client's address given the peer's and the `X-Forwarded-For` header lines.
    public func address(peer: String?, forwardedFor: [String]) -> String {
        guard var client = peer else { return "unknown" }
        guard isTrusted(client) else { return client }
        let hops = forwardedFor.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }
        for hop in hops.reversed() {
            // An entry that is not an address cannot be a proxy we trust: stop at the last good one.
            guard IPAddressRange(hop) != nil else { break }
            client = hop
            if !isTrusted(hop) { break }
        }
        return client
    }

    /// The key per-client rate limits count the request under: the client's address, or its /64
    /// for IPv6 (see `IPAddressRange.limitKey(of:)`).
    public func limitKey(of request: Request, context: SesameRequestContext) -> String {
        limitKey(peer: context.remoteAddress, headers: request.headers)
    }

    /// The per-client limit key of a request from `peer` with `headers`.
    public func limitKey(peer: String?, headers: HTTPFields) -> String {
        IPAddressRange.limitKey(of: address(peer: peer, forwardedFor: headers[values: .xForwardedFor]))
    }

    private func isTrusted(_ address: String) -> Bool {
        trustedProxies.contains { $0.contains(address) }
    }
}

extension HTTPField.Name {
    /// `X-Forwarded-For`.
    public static let xForwardedFor = Self("X-Forwarded-For")!
}

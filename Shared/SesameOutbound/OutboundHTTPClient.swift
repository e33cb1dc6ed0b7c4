import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import SesameConfiguration

/// The one client through which Sesame's services call an address a user configured (today an
/// identity issuer's JWKS, an app's webhooks). It resolves the host itself, refuses when any address
/// is internal (`OutboundAddressPolicy`), then connects to exactly the address it checked, with TLS
/// verified for the host name: a DNS answer that changes between the check and the connection
/// (rebinding) cannot redirect it. No redirects are followed; the time and the body are bounded.
public struct OutboundHTTPClient: Sendable {
    /// Why a call was not made, or not accepted.
    public enum Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        case invalidURL
        case schemeNotAllowed(String)
        case unresolvable(String)
        case internalAddress(host: String, address: String, use: OutboundUse)
        case redirected(status: Int)
        case status(Int)
        case tooLarge(limit: Int)
        case timedOut(Duration)

        public var description: String {
            switch self {
            case .invalidURL: "the URL is not an absolute http(s) URL with a host"
            case .schemeNotAllowed(let scheme): "\(scheme) is not allowed: outbound calls use https"
            case .unresolvable(let host): "\(host) does not resolve"
            case .internalAddress(let host, let address, let use):
                "\(host) resolves to \(address), an internal address not opened to \(use) calls (an operator opens it with SESAME_OUTBOUND_ALLOWED_HOSTS if it is theirs)"
            case .redirected(let status): "the URL answered a redirect (\(status)); redirects are not followed"
            case .status(let status): "the URL answered \(status)"
            case .tooLarge(let limit): "the answer is larger than \(limit) bytes"
            case .timedOut(let limit): "the call did not finish within \(limit)"
            }
        }
    }

    public let policy: OutboundAddressPolicy
    /// The whole call's limit: resolution, connection, TLS, answer.
    public let timeout: Duration

    public init(policy: OutboundAddressPolicy, timeout: Duration = .seconds(5)) {
        self.policy = policy
        self.timeout = timeout
    }

    /// GETs `url` for `use` and returns the body of a 200 answer of at most `maximumBytes`.
    public func get(_ url: String, for use: OutboundUse, accept: String = "application/json", maximumBytes: Int) async throws -> ByteBuffer {
        try await call(url, for: use, method: .GET, headers: [("Accept", accept)], body: nil) { response in
            guard response.status == .ok else { throw Refusal.status(Int(response.status.code)) }
            do {
                return try await response.body.collect(upTo: maximumBytes)
            } catch is NIOTooManyBytesError {
                throw Refusal.tooLarge(limit: maximumBytes)
            }
        }
    }

    /// POSTs `body` to `url` for `use` with `headers`; returns the answer's status (2xx), its body
    /// unread. Any other status is `Refusal.status`.
    public func post(_ url: String, for use: OutboundUse, headers: [(String, String)], body: ByteBuffer) async throws -> Int {
        try await call(url, for: use, method: .POST, headers: headers, body: body) { response in
            guard (200..<300).contains(Int(response.status.code)) else { throw Refusal.status(Int(response.status.code)) }
            return Int(response.status.code)
        }
    }

    /// POSTs `body` to `url` for `use` with `headers`; returns the answer's status, whatever it is
    /// (a redirect aside), and its body of at most `maximumBytes`: for services that explain in the body.
    public func postReadingAnswer(
        _ url: String, for use: OutboundUse, headers: [(String, String)], body: ByteBuffer, maximumBytes: Int
    ) async throws -> (status: Int, body: ByteBuffer) {
        try await call(url, for: use, method: .POST, headers: headers, body: body) { response in
            do {
                return (Int(response.status.code), try await response.body.collect(upTo: maximumBytes))
            } catch is NIOTooManyBytesError {
                throw Refusal.tooLarge(limit: maximumBytes)
            }
        }
    }

    /// The call, within `timeout` from start to the last byte read: past it the call is cancelled
    /// (its connection closed) and `Refusal.timedOut` thrown. Resolution runs on a thread that
    /// cannot be interrupted; the caller stops waiting for it all the same.
    private func call<Result: Sendable>(
        _ url: String, for use: OutboundUse, method: HTTPMethod, headers: [(String, String)], body: ByteBuffer?,
        read: @escaping @Sendable (HTTPClientResponse) async throws -> Result
    ) async throws -> Result {
        let timeout = self.timeout
        return try await withThrowingTaskGroup(of: Result?.self) { group in
            group.addTask { try await self.unboundedCall(url, for: use, method: method, headers: headers, body: body, read: read) }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let result = first else { throw Refusal.timedOut(timeout) }
            return result
        }
    }

    /// Checks `url` against the policy, connects to exactly the address checked, and hands the
    /// answer to `read` (a redirect is refused first).
    private func unboundedCall<Result: Sendable>(
        _ url: String, for use: OutboundUse, method: HTTPMethod, headers: [(String, String)], body: ByteBuffer?,
        read: @Sendable (HTTPClientResponse) async throws -> Result
    ) async throws -> Result {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            var host = components.host, !host.isEmpty
        else { throw Refusal.invalidURL }
        let port = components.port ?? OutboundAddressPolicy.defaultPort(scheme: scheme)
        guard policy.permits(scheme: scheme, host: host, port: port, for: use) else { throw Refusal.schemeNotAllowed(scheme) }
        let checked = try await Self.checkedAddresses(of: host, port: port, for: use, policy: policy)
        host = checked.host
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow, timeout: .init(connect: .init(timeout), read: .init(timeout)))
        Self.pin(&configuration, host: host, to: checked.addresses[0])
        Self.untraced(&configuration)
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        do {
            var request = HTTPClientRequest(url: url)
            request.method = method
            for (name, value) in headers { request.headers.add(name: name, value: value) }
            if let body { request.body = .bytes(body) }
            let response = try await client.execute(request, timeout: .init(timeout))
            if (300..<400).contains(Int(response.status.code)) { throw Refusal.redirected(status: Int(response.status.code)) }
            let result = try await read(response)
            try await client.shutdown()
            return result
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    /// `host` without an IPv6 literal's brackets, and the addresses it resolves to, every one of
    /// which `policy` permits for `use` on `port` (a name may mix a public address with an internal
    /// one); else the refusal.
    static func checkedAddresses(
        of host: String, port: Int, for use: OutboundUse, policy: OutboundAddressPolicy
    ) async throws -> (host: String, addresses: [String]) {
        let host = OutboundAllowance.bare(host)
        let addresses = try await resolve(host)
        if let refused = addresses.first(where: { !policy.permits(host: host, port: port, address: $0, for: use) }) {
            throw Refusal.internalAddress(host: host, address: refused, use: use)
        }
        return (host, addresses)
    }

    /// Makes a client of `configuration` connect to `address`, the one checked, not to whatever
    /// `host` resolves to next (a rebinding DNS answer).
    static func pin(_ configuration: inout HTTPClient.Configuration, host: String, to address: String) {
        if address != host { configuration.dnsOverride = [host: address] }
    }

    /// Keeps a client of `configuration` out of traces. AsyncHTTPClient traces with the process's
    /// tracer by default: a span per call recording `url.full` (a relay upstream's path and query,
    /// an identity provider's URL) and a `traceparent` header sent to the third party. Sesame's
    /// outbound calls go outside: they are timed by the caller's own span and metrics instead.
    static func untraced(_ configuration: inout HTTPClient.Configuration) {
        configuration.tracing.tracer = nil
    }

    /// The addresses `host` resolves to (itself when it is an address), through the process's
    /// `HostResolver`: a pool of its own, one lookup per name, a deadline.
    static func resolve(_ host: String) async throws -> [String] {
        try await HostResolver.shared.addresses(of: host)
    }
}

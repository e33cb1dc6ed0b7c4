import AsyncHTTPClient
import NIOCore
import SesameConfiguration
import Synchronization

/// Pooled HTTP clients for upstreams a user configured and Sesame calls often (an attested relay's),
/// each pinned to an address the outbound policy checked: like `OutboundHTTPClient`, a DNS answer
/// that changes after the check cannot move the connection inside the deployment, but connections
/// are kept and reused, so a call pays no handshake.
///
/// Bounds: at most `maxHosts` hosts at once (the least recently used is retired past it); each
/// host's name is resolved and checked again after `recheckAfter`, and a client whose address
/// changed is retired. Retired clients keep their calls in flight and are shut down
/// `retireAfter` later (longer than any call may last). No redirects are followed.
public final class PinnedClientPool: Sendable {
    public struct Limits: Sendable {
        public var maxHosts = 256
        /// Connections kept open to one host (HTTP/1.1; an HTTP/2 upstream multiplexes on fewer).
        public var connectionsPerHost = 512
        public var recheckAfter: Duration = .seconds(60)
        public var retireAfter: Duration = .seconds(330)
        /// A refused connection is retried until this passes (AsyncHTTPClient's way): an upstream
        /// that is down fails a call in this long.
        public var connectTimeout: Duration = .seconds(5)

        public init() {}
    }

    public let policy: OutboundAddressPolicy
    public let limits: Limits

    private struct Entry {
        let client: HTTPClient
        let address: String
        var checkedAt: ContinuousClock.Instant
        var usedAt: ContinuousClock.Instant
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var retired: [(client: HTTPClient, closeAt: ContinuousClock.Instant)] = []
        var shutDown = false
    }

    private let state = Mutex(State())

    public init(policy: OutboundAddressPolicy, limits: Limits = Limits()) {
        self.policy = policy
        self.limits = limits
    }

    /// A client for `scheme://host:port`, connected to an address of `host` the policy permits for
    /// `use`. Clients are shared by every app calling the same origin, so a client already held is
    /// handed out only when its address is permitted for this `use` too (an internal host opened to
    /// one app's relays is not thereby open to another's). Throws `OutboundHTTPClient.Refusal` when
    /// the scheme or the address is refused.
    public func client(scheme: String, host: String, port: Int, for use: OutboundUse) async throws -> HTTPClient {
        guard policy.permits(scheme: scheme, host: host, port: port, for: use) else { throw OutboundHTTPClient.Refusal.schemeNotAllowed(scheme) }
        let host = OutboundAllowance.bare(host.lowercased())
        let key = "\(scheme)://\(host):\(port)"
        let now = ContinuousClock.now
        let due: [HTTPClient] = state.withLock { state in
            let due = state.retired.filter { $0.closeAt <= now }.map(\.client)
            state.retired.removeAll { $0.closeAt <= now }
            return due
        }
        for client in due { try? await client.shutdown() }
        if let fresh = state.withLock({ state -> (client: HTTPClient, address: String)? in
            guard var entry = state.entries[key], now - entry.checkedAt < limits.recheckAfter else { return nil }
            entry.usedAt = now
            state.entries[key] = entry
            return (entry.client, entry.address)
        }) {
            guard policy.permits(host: host, port: port, address: fresh.address, for: use) else {
                throw OutboundHTTPClient.Refusal.internalAddress(host: host, address: fresh.address, use: use)
            }
            return fresh.client
        }

        let address = try await OutboundHTTPClient.checkedAddresses(of: host, port: port, for: use, policy: policy).addresses[0]
        return try state.withLock { state in
            guard !state.shutDown else { throw OutboundHTTPClient.Refusal.unresolvable(host) }
            if var entry = state.entries[key], entry.address == address {
                entry.checkedAt = now
                entry.usedAt = now
                state.entries[key] = entry
                return entry.client
            }
            if let old = state.entries.removeValue(forKey: key) { state.retired.append((old.client, now + limits.retireAfter)) }
            if state.entries.count >= limits.maxHosts, let oldest = state.entries.min(by: { $0.value.usedAt < $1.value.usedAt }) {
                state.entries[oldest.key] = nil
                state.retired.append((oldest.value.client, now + limits.retireAfter))
            }
            let client = makeClient(host: host, address: address)
            state.entries[key] = Entry(client: client, address: address, checkedAt: now, usedAt: now)
            return client
        }
    }

    /// Shuts every client down (calls in flight fail); later requests are refused.
    public func shutdown() async {
        let clients = state.withLock { state in
            state.shutDown = true
            let clients = state.entries.values.map(\.client) + state.retired.map(\.client)
            state.entries = [:]
            state.retired = []
            return clients
        }
        for client in clients { try? await client.shutdown() }
    }

    /// How many clients are open, retired ones included (for tests and metrics).
    public var openClients: Int { state.withLock { $0.entries.count + $0.retired.count } }

    private func makeClient(host: String, address: String) -> HTTPClient {
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: .init(limits.connectTimeout)),
            connectionPool: .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: limits.connectionsPerHost))
        OutboundHTTPClient.pin(&configuration, host: host, to: address)
        OutboundHTTPClient.untraced(&configuration)
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }
}

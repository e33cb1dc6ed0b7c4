import AsyncHTTPClient
import SesameConfiguration
import SesameOutbound
import Testing

/// The relay's pooled clients: refused for internal addresses and plain http as one-off calls are,
/// reused while their check is fresh, and bounded in hosts.
@Suite("Pinned client pool")
struct PinnedClientPoolTests {
    static let relay = OutboundUse(.relay, appID: "A.app")

    @Test("an internal address (as an address or as a name that resolves to one) and plain http are refused; an allowed host is served")
    func refusals() async throws {
        let pool = PinnedClientPool(policy: OutboundAddressPolicy())
        await #expect(throws: OutboundHTTPClient.Refusal.internalAddress(host: "127.0.0.1", address: "127.0.0.1", use: Self.relay)) {
            _ = try await pool.client(scheme: "https", host: "127.0.0.1", port: 443, for: Self.relay)
        }
        await #expect(throws: OutboundHTTPClient.Refusal.self) { _ = try await pool.client(scheme: "https", host: "localhost", port: 443, for: Self.relay) }
        await #expect(throws: OutboundHTTPClient.Refusal.internalAddress(host: "169.254.169.254", address: "169.254.169.254", use: Self.relay)) {
            _ = try await pool.client(scheme: "https", host: "169.254.169.254", port: 443, for: Self.relay)
        }
        await #expect(throws: OutboundHTTPClient.Refusal.schemeNotAllowed("http")) { _ = try await pool.client(scheme: "http", host: "8.8.8.8", port: 80, for: Self.relay) }
        #expect(pool.openClients == 0)
        await pool.shutdown()
    }

    @Test("a host's client is reused while its check is fresh; past maxHosts the least recently used is retired; shutdown closes all")
    func reuseAndBounds() async throws {
        var limits = PinnedClientPool.Limits()
        limits.maxHosts = 2
        let pool = PinnedClientPool(
            policy: OutboundAddressPolicy(
                allowances: try OutboundAllowance.parseList("relay=127.0.0.1:*@*,relay=127.0.0.2:*@*,relay=127.0.0.3:*@*"), allowsPlainHTTPToAllowedHosts: true),
            limits: limits)
        let first = try await pool.client(scheme: "http", host: "127.0.0.1", port: 8080, for: Self.relay)
        #expect(try await pool.client(scheme: "http", host: "127.0.0.1", port: 8080, for: Self.relay) === first)
        #expect(try await pool.client(scheme: "http", host: "127.0.0.1", port: 8081, for: Self.relay) !== first)
        _ = try await pool.client(scheme: "http", host: "127.0.0.2", port: 8080, for: Self.relay)
        // Three hosts seen, two kept: the first is retired, not shut while its calls may run.
        #expect(pool.openClients == 3)
        #expect(try await pool.client(scheme: "http", host: "127.0.0.1", port: 8080, for: Self.relay) !== first)
        await pool.shutdown()
        #expect(pool.openClients == 0)
        await #expect(throws: OutboundHTTPClient.Refusal.self) { _ = try await pool.client(scheme: "http", host: "127.0.0.3", port: 80, for: Self.relay) }
    }

    @Test("a client held for one app's opened internal host is not handed to another app, nor for the port it was not opened on")
    func heldClientsRecheckedPerApp() async throws {
        let pool = PinnedClientPool(policy: OutboundAddressPolicy(allowances: try OutboundAllowance.parseList("relay=127.0.0.1:8443@A.app")))
        _ = try await pool.client(scheme: "https", host: "127.0.0.1", port: 8443, for: Self.relay)
        let other = OutboundUse(.relay, appID: "B.app")
        // Held and fresh, yet refused: the held client's address is checked for each use.
        await #expect(throws: OutboundHTTPClient.Refusal.internalAddress(host: "127.0.0.1", address: "127.0.0.1", use: other)) {
            _ = try await pool.client(scheme: "https", host: "127.0.0.1", port: 8443, for: other)
        }
        await #expect(throws: OutboundHTTPClient.Refusal.self) { _ = try await pool.client(scheme: "https", host: "127.0.0.1", port: 8444, for: Self.relay) }
        #expect(pool.openClients == 1)
        await pool.shutdown()
    }
}

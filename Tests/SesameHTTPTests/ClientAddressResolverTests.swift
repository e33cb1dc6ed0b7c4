import SesameConfiguration
import SesameHTTP
import Testing

@Suite("Client address")
struct ClientAddressResolverTests {
    let gateway = ClientAddressResolver(trustedProxies: [IPAddressRange("10.0.0.0/8")!, IPAddressRange("127.0.0.1")!])

    @Test("with no trusted proxy, X-Forwarded-For is ignored: a client cannot pick its own address")
    func untrustedHeaderIgnored() {
        let direct = ClientAddressResolver(trustedProxies: [])
        #expect(direct.address(peer: "203.0.113.9", forwardedFor: ["198.51.100.1"]) == "203.0.113.9")
        // A peer that is not a trusted proxy is the client, whatever it claims.
        #expect(gateway.address(peer: "203.0.113.9", forwardedFor: ["198.51.100.1"]) == "203.0.113.9")
    }

    @Test("behind trusted proxies, the rightmost address that is not a proxy is the client")
    func rightmostUntrusted() {
        // nginx appends the address it saw; what the client sent itself stays to the left.
        #expect(gateway.address(peer: "127.0.0.1", forwardedFor: ["6.6.6.6, 198.51.100.7"]) == "198.51.100.7")
        // Two proxy hops, and the header split over two lines.
        #expect(gateway.address(peer: "10.0.0.2", forwardedFor: ["6.6.6.6, 198.51.100.7", "10.1.1.1"]) == "198.51.100.7")
        // A trusted peer without the header is itself the client.
        #expect(gateway.address(peer: "127.0.0.1", forwardedFor: []) == "127.0.0.1")
        // Garbage stops the walk at the last real address.
        #expect(gateway.address(peer: "127.0.0.1", forwardedFor: ["198.51.100.7, junk"]) == "127.0.0.1")
        #expect(gateway.address(peer: nil, forwardedFor: ["198.51.100.7"]) == "unknown")
    }

    @Test("limits count IPv4 addresses singly and IPv6 clients by their /64")
    func limitKeys() {
        #expect(IPAddressRange.limitKey(of: "203.0.113.9") == "203.0.113.9")
        #expect(IPAddressRange.limitKey(of: "::ffff:203.0.113.9") == "203.0.113.9")
        #expect(IPAddressRange.limitKey(of: "2001:db8:1:2:aaaa::1") == "2001:db8:1:2::/64")
        #expect(IPAddressRange.limitKey(of: "2001:db8:1:2:ffff:ffff:ffff:ffff") == IPAddressRange.limitKey(of: "2001:db8:1:2::9"))
        #expect(IPAddressRange.limitKey(of: "2001:db8:1:3::1") != IPAddressRange.limitKey(of: "2001:db8:1:2::1"))
        #expect(IPAddressRange.limitKey(of: "unknown") == "unknown")
    }
}

import SesameOutbound
import Testing

/// Which addresses and URLs an outbound call to a user's address may reach.
@Suite("Outbound address policy")
struct OutboundAddressPolicyTests {
    @Test(
        "loopback, private, link-local (metadata), CGNAT, unique-local, multicast, reserved and mapped forms are internal",
        arguments: [
            "127.0.0.1", "127.8.9.10", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "100.64.0.1",
            "100.127.255.255", "0.0.0.0", "224.0.0.1", "255.255.255.255", "198.18.0.1", "::1", "::", "fd00::1", "fc00::1", "fe80::1",
            "ff02::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "64:ff9b::a00:1", "::ffff:0:a00:1", "::ffff:0:a9fe:a9fe", "not-an-address",
        ])
    func internalAddresses(address: String) {
        #expect(OutboundAddressPolicy.isInternal(address))
        #expect(!OutboundAddressPolicy().permits(host: "issuer.example.com", address: address))
    }

    @Test("public addresses are not internal", arguments: ["8.8.8.8", "17.253.144.10", "100.128.0.1", "172.32.0.1", "2606:4700::1111", "::ffff:8.8.8.8"])
    func publicAddresses(address: String) {
        #expect(!OutboundAddressPolicy.isInternal(address))
    }

    @Test("an operator-allowed host may be internal, and plain http reaches it only when development allows it")
    func allowedHosts() {
        let development = OutboundAddressPolicy(allowedInternalHosts: ["IdP.corp.internal"], allowsPlainHTTPToAllowedHosts: true)
        #expect(development.permits(host: "idp.corp.internal", address: "10.0.0.5"))
        #expect(!development.permits(host: "other.corp.internal", address: "10.0.0.5"))
        #expect(development.permits(scheme: "http", host: "idp.corp.internal"))
        #expect(!development.permits(scheme: "http", host: "issuer.example.com"))
        let production = OutboundAddressPolicy(allowedInternalHosts: ["idp.corp.internal"])
        #expect(!production.permits(scheme: "http", host: "idp.corp.internal"))
        #expect(production.permits(scheme: "https", host: "idp.corp.internal"))
    }

    @Test("a configured URL is refused for its scheme or an internal address literal, and names wait for the call")
    func configuredURLs() {
        let policy = OutboundAddressPolicy()
        #expect(policy.refusal(of: "https://issuer.example.com/jwks.json") == nil)
        #expect(policy.refusal(of: "https://localhost/jwks.json") == nil)
        #expect(policy.refusal(of: "http://issuer.example.com/jwks.json") != nil)
        #expect(policy.refusal(of: "https://169.254.169.254/latest") != nil)
        #expect(policy.refusal(of: "https://[::1]:8443/") != nil)
        #expect(policy.refusal(of: "https://[::ffff:10.0.0.1]/") != nil)
        #expect(policy.refusal(of: "file:///etc/passwd") != nil)
        #expect(policy.refusal(of: "jwks.json") != nil)
    }

    @Test("IPv4 in other forms is refused when configured; IPv4-compatible, 6to4 and Teredo addresses are internal",
          arguments: ["https://2130706433/hook", "https://0x7f.1/hook", "https://127.1/hook", "https://0177.0.0.1/hook", "https://0x7f000001/hook"])
    func numericHosts(url: String) {
        #expect(OutboundAddressPolicy().refusal(of: url) != nil, "\(url) was accepted")
    }

    @Test("addresses that carry an IPv4 address for a relay are internal", arguments: ["::7f00:1", "2002:7f00:1::1", "2001:0:7f00:1::1"])
    func embeddedIPv4(address: String) {
        #expect(OutboundAddressPolicy.isInternal(address))
    }

    @Test("names that merely contain digits are not numeric hosts")
    func namesWithDigits() {
        #expect(OutboundAddressPolicy().refusal(of: "https://hooks.example.com/x") == nil)
        #expect(OutboundAddressPolicy().refusal(of: "https://1password.example.com/x") == nil)
        #expect(OutboundAddressPolicy().refusal(of: "https://a1b2.c3/x") == nil)
    }
}

import SesameConfiguration
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
        #expect(!OutboundAddressPolicy().permits(host: "issuer.example.com", port: 443, address: address, for: Self.jwks))
    }

    @Test("public addresses are not internal", arguments: ["8.8.8.8", "17.253.144.10", "100.128.0.1", "172.32.0.1", "2606:4700::1111", "::ffff:8.8.8.8"])
    func publicAddresses(address: String) {
        #expect(!OutboundAddressPolicy.isInternal(address))
    }

    static let jwks = OutboundUse(.jwks, appID: "A.app")

    @Test("an operator-allowed host may be internal, and plain http reaches it only when development allows it")
    func allowedHosts() throws {
        let allowances = try OutboundAllowance.parseList("jwks=IdP.corp.internal:443@*")
        let development = OutboundAddressPolicy(allowances: allowances, allowsPlainHTTPToAllowedHosts: true)
        #expect(development.permits(host: "idp.corp.internal", port: 443, address: "10.0.0.5", for: Self.jwks))
        #expect(!development.permits(host: "other.corp.internal", port: 443, address: "10.0.0.5", for: Self.jwks))
        #expect(development.permits(scheme: "http", host: "idp.corp.internal", port: 443, for: Self.jwks))
        #expect(!development.permits(scheme: "http", host: "issuer.example.com", port: 443, for: Self.jwks))
        let production = OutboundAddressPolicy(allowances: allowances)
        #expect(!production.permits(scheme: "http", host: "idp.corp.internal", port: 443, for: Self.jwks))
        #expect(production.permits(scheme: "https", host: "idp.corp.internal", port: 443, for: Self.jwks))
    }

    @Test("an entry opens its host for its purpose, port and apps only: a JWKS host is no relay upstream, nor another app's")
    func allowancesPerPurposePortAndApp() throws {
        let policy = OutboundAddressPolicy(
            allowances: try OutboundAllowance.parseList(
                "jwks=idp.corp.internal:443@*, relay=llm.corp.internal:8443@A.app+B.app, webhook=[fd00::7]:*@C.app"))
        let inside = "10.0.0.5"
        #expect(policy.permits(host: "idp.corp.internal", port: 443, address: inside, for: OutboundUse(.jwks, appID: "Z.app")))
        // The issue's attack: an app's owner relays to the host opened for identity providers.
        #expect(!policy.permits(host: "idp.corp.internal", port: 443, address: inside, for: OutboundUse(.relay, appID: "A.app")))
        #expect(!policy.permits(host: "idp.corp.internal", port: 22, address: inside, for: OutboundUse(.jwks, appID: "A.app")))
        #expect(policy.permits(host: "llm.corp.internal", port: 8443, address: inside, for: OutboundUse(.relay, appID: "B.app")))
        #expect(!policy.permits(host: "llm.corp.internal", port: 8443, address: inside, for: OutboundUse(.relay, appID: "Z.app")))
        #expect(!policy.permits(host: "llm.corp.internal", port: 443, address: inside, for: OutboundUse(.relay, appID: "A.app")))
        #expect(!policy.permits(host: "llm.corp.internal", port: 8443, address: inside, for: OutboundUse(.webhook, appID: "A.app")))
        #expect(policy.permits(host: "[FD00::7]", port: 9000, address: "fd00::7", for: OutboundUse(.webhook, appID: "C.app")))
        #expect(!policy.permits(host: "fd00::7", port: 9000, address: "fd00::7", for: OutboundUse(.webhook, appID: nil)))
        // Apple's services are the operator's own URLs: no entry of the setting opens anything to them.
        #expect(!policy.permits(host: "idp.corp.internal", port: 443, address: inside, for: OutboundUse(.apple, appID: nil)))
        #expect(policy.refusal(of: "https://10.0.0.9:8443/v1", for: OutboundUse(.relay, appID: "A.app")) != nil)
    }

    @Test(
        "entries that do not say a purpose, port and apps are refused with the form expected",
        arguments: [
            "idp.corp.internal", "idp.corp.internal:443", "jwks=idp.corp.internal@*", "jwks=idp.corp.internal:443", "dns=idp:443@*",
            "apple=idp:443@*", "jwks=idp:0@*", "jwks=idp:70000@*", "jwks=:443@*", "jwks=fd00::1:443@*", "jwks=idp:443@", "jwks=idp:443@A+",
            "jwks=idp:443@A*", "jwks+=idp:443@*",
        ])
    func malformedAllowances(entry: String) {
        #expect(throws: ConfigurationError.self) { try OutboundAllowance.parseList("jwks=ok.internal:443@*,\(entry)") }
    }

    @Test("an entry reads back as written")
    func allowanceRoundTrip() throws {
        for entry in ["jwks=idp.corp.internal:443@*", "*=127.0.0.1:*@*", "relay+webhook=[fd00::7]:8443@A.app+B.app"] {
            #expect(try OutboundAllowance.parseList(entry).map(\.description) == [entry])
        }
    }

    @Test("the operator's Apple URLs are open to Apple's calls only, wherever they point")
    func operatorURLs() throws {
        let configuration = try ServiceConfiguration(environment: ["SESAME_ENVIRONMENT": "development"], defaultPort: 8080)
        let policy = OutboundAddressPolicy.operatorURLs(["http://127.0.0.1:9999", "https://devicecheck.internal"], configuration: configuration)
        let apple = OutboundUse(.apple, appID: nil)
        #expect(policy.permits(host: "127.0.0.1", port: 9999, address: "127.0.0.1", for: apple))
        #expect(policy.permits(scheme: "http", host: "127.0.0.1", port: 9999, for: apple))
        #expect(policy.permits(host: "devicecheck.internal", port: 443, address: "10.1.1.1", for: apple))
        #expect(!policy.permits(host: "127.0.0.1", port: 9998, address: "127.0.0.1", for: apple))
        #expect(!policy.permits(host: "127.0.0.1", port: 9999, address: "127.0.0.1", for: OutboundUse(.relay, appID: "A.app")))
    }

    @Test("a configured URL is refused for its scheme or an internal address literal, and names wait for the call")
    func configuredURLs() {
        let policy = OutboundAddressPolicy()
        #expect(policy.refusal(of: "https://issuer.example.com/jwks.json", for: Self.jwks) == nil)
        #expect(policy.refusal(of: "https://localhost/jwks.json", for: Self.jwks) == nil)
        #expect(policy.refusal(of: "http://issuer.example.com/jwks.json", for: Self.jwks) != nil)
        #expect(policy.refusal(of: "https://169.254.169.254/latest", for: Self.jwks) != nil)
        #expect(policy.refusal(of: "https://[::1]:8443/", for: Self.jwks) != nil)
        #expect(policy.refusal(of: "https://[::ffff:10.0.0.1]/", for: Self.jwks) != nil)
        #expect(policy.refusal(of: "file:///etc/passwd", for: Self.jwks) != nil)
        #expect(policy.refusal(of: "jwks.json", for: Self.jwks) != nil)
    }

    @Test("IPv4 in other forms is refused when configured; IPv4-compatible, 6to4 and Teredo addresses are internal",
          arguments: ["https://2130706433/hook", "https://0x7f.1/hook", "https://127.1/hook", "https://0177.0.0.1/hook", "https://0x7f000001/hook"])
    func numericHosts(url: String) {
        #expect(OutboundAddressPolicy().refusal(of: url, for: Self.jwks) != nil, "\(url) was accepted")
    }

    @Test("addresses that carry an IPv4 address for a relay are internal", arguments: ["::7f00:1", "2002:7f00:1::1", "2001:0:7f00:1::1"])
    func embeddedIPv4(address: String) {
        #expect(OutboundAddressPolicy.isInternal(address))
    }

    @Test("names that merely contain digits are not numeric hosts")
    func namesWithDigits() {
        #expect(OutboundAddressPolicy().refusal(of: "https://hooks.example.com/x", for: Self.jwks) == nil)
        #expect(OutboundAddressPolicy().refusal(of: "https://1password.example.com/x", for: Self.jwks) == nil)
        #expect(OutboundAddressPolicy().refusal(of: "https://a1b2.c3/x", for: Self.jwks) == nil)
    }
}

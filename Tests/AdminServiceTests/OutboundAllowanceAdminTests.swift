import Foundation
import HTTPTypes
import SesameTestSupport
import Testing

/// The operator's internal hosts are opened per purpose, port and app (issue 72, medium 3): a host
/// opened to identity providers' JWKS is no relay upstream or webhook, and one opened to an app's
/// relays is not another app's. Refused when the address is set; delivery refuses at the call too
/// (`RelayOutboundAllowanceTests`).
@Suite("Admin: outbound allowances per purpose, port and app", .timeLimit(.minutes(2)))
struct OutboundAllowanceAdminTests {
    static func relay(_ upstream: String) -> [String: Any] {
        ["upstream": upstream, "methods": ["POST"], "paths": ["/v1/chat"], "headers": ["Authorization": "Bearer sk-0123456789abcdef"]]
    }

    @Test("a JWKS host is refused as a relay upstream and a webhook; a relay host only on its port and for its app")
    func setTime() async throws {
        let allowances = "jwks=10.0.0.7:443@*,relay=10.0.0.8:8443@\(AdminHarness.appID),relay=10.0.0.9:8443@OTHERTEAM.com.example.other"
        try await AdminHarness.run(outboundAllowances: allowances) { harness in
            let key = try await harness.createKey()
            // The attack: relay /** to the host the operator opened for an identity provider.
            let toIdP = try await harness.call(.put, "/v1/admin/relays/idp", credential: key, json: Self.relay("https://10.0.0.7"))
            #expect(toIdP.status == .badRequest && "\(toIdP.json)".contains("internal address"), "\(toIdP.json)")
            let hook = try await harness.call(.post, "/v1/admin/webhooks", credential: key, json: ["url": "https://10.0.0.7/hook"])
            #expect(hook.status == .badRequest, "\(hook.json)")
            // Opened to this app's relays on 8443: that port only.
            let opened = try await harness.call(.put, "/v1/admin/relays/llm", credential: key, json: Self.relay("https://10.0.0.8:8443/v1"))
            #expect(opened.status == .ok, "\(opened.json)")
            let otherPort = try await harness.call(.put, "/v1/admin/relays/ssh", credential: key, json: Self.relay("https://10.0.0.8:22"))
            #expect(otherPort.status == .badRequest, "\(otherPort.json)")
            // Opened to another app's relays: not this one's.
            let othersHost = try await harness.call(.put, "/v1/admin/relays/other", credential: key, json: Self.relay("https://10.0.0.9:8443"))
            #expect(othersHost.status == .badRequest, "\(othersHost.json)")

            // The JWKS host serves as an identity issuer, on its port; the relay host does not.
            var policy = try #require(try await harness.call(.get, "/v1/admin/policy", credential: key)["policy"] as? [String: Any])
            policy["identityIssuer"] = ["issuer": "https://idp.corp", "audiences": ["app"], "jwksURL": "https://10.0.0.7/jwks.json"]
            let jwks = try await harness.call(.put, "/v1/admin/policy", credential: key, json: policy)
            #expect(jwks.status == .ok, "\(jwks.json)")
            policy["identityIssuer"] = ["issuer": "https://idp.corp", "audiences": ["app"], "jwksURL": "https://10.0.0.8:8443/jwks.json"]
            let relayHostAsJWKS = try await harness.call(.put, "/v1/admin/policy", credential: key, json: policy)
            #expect(relayHostAsJWKS.status == .badRequest, "\(relayHostAsJWKS.json)")
        }
    }
}

import Foundation
import Hummingbird
import HummingbirdTesting
import SesameTestSupport
import Testing

@Suite("Delivery: every endpoint enforces kill switches and emergency revocations", .timeLimit(.minutes(3)))
struct AccessGateTests {
    @Test("a kill switch and an emergency revocation stop blob links, links already handed out and user data, not only /v1/config")
    func everyEndpointIsGated() async throws {
        try await DeliveryHarness.run { harness in
            let put = try await harness.admin.execute(
                uri: "/v1/admin/blob/model.bin", method: .put,
                headers: [.authorization: "Bearer \(harness.key)", .contentType: "application/octet-stream"], body: ByteBuffer(bytes: [1, 2, 3])
            ) { $0.status }
            #expect(put == .ok)
            let revision = try await harness.upload(["ok": true], version: "*")
            let old = try await harness.app.attest(with: harness.auth, appVersion: "2.1.3").accessToken
            try await harness.waitUntilServed(version: "2.1.3", revision: revision, token: old)
            try await harness.setPolicy(["userIdentity": "unverified"]) { instance in
                try await harness.userData(.get, userID: "alice", token: old, instance: instance).status == .notFound
            }
            let url = try #require(try await harness.blobLink("model.bin", token: old).json["url"] as? String)
            #expect(try await harness.get(url).status == .ok)
            #expect(try await harness.userData(.put, userID: "alice", token: old, body: #"{"a":1}"#).status == .ok)

            // Kill switch: every endpoint answers 403 with the reason, on every instance.
            try await harness.manage(.post, "kill-switch", ["versions": ["2.1.3"], "enabled": false, "reason": "Update now."])
            for instance in harness.deliveries.indices {
                try await eventually("instance \(instance) refuses the killed version") {
                    try await harness.blobLink("model.bin", token: old, instance: instance).errorCode == "version_disabled"
                }
            }
            #expect(try await harness.get(url).errorCode == "version_disabled")
            #expect(try await harness.userData(.get, userID: "alice", token: old).status == .forbidden)
            #expect(try await harness.userData(.put, userID: "alice", token: old, body: #"{"a":2}"#).status == .forbidden)
            try await harness.manage(.post, "kill-switch", ["versions": ["2.1.3"], "enabled": true])
            try await eventually("the version is back") { try await harness.get(url).status == .ok }

            // Emergency revocation: the older token, and the link made for it, are refused everywhere.
            let versionless = try await harness.app.attest(with: harness.auth).accessToken
            try await harness.manage(.post, "emergency-revoke", ["version": "2.*"])
            try await eventually("the revocation arrives") { try await harness.blobLink("model.bin", token: old).errorCode == "token_revoked" }
            #expect(try await harness.get(url).errorCode == "token_revoked")
            #expect(try await harness.userData(.get, userID: "alice", token: old).status == .unauthorized)
            // A token without a version is covered by every revocation, whatever version it asks for.
            #expect(try await harness.fetch(version: "9.0", token: versionless).errorCode == "token_revoked")
            #expect(try await harness.blobLink("model.bin", token: versionless).errorCode == "token_revoked")

            // A token issued after the revocation passes everywhere.
            let fresh = try await harness.app.attest(with: harness.auth, appVersion: "2.1.3").accessToken
            let freshURL = try #require(try await harness.blobLink("model.bin", token: fresh).json["url"] as? String)
            #expect(try await harness.get(freshURL).status == .ok)
            #expect(try await harness.userData(.get, userID: "alice", token: fresh).status == .ok)
        }
    }

    @Test("blob bytes are served as an attachment that no browser renders or sniffs")
    func blobHeaders() async throws {
        try await DeliveryHarness.run { harness in
            let html = Array("<html><script>alert(1)</script></html>".utf8)
            _ = try await harness.admin.execute(
                uri: "/v1/admin/blob/page.html", method: .put,
                headers: [.authorization: "Bearer \(harness.key)", .contentType: "text/html"], body: ByteBuffer(bytes: html)
            ) { $0.status }
            let token = try await harness.app.attest(with: harness.auth).accessToken
            let url = try #require(try await harness.blobLink("page.html", token: token).json["url"] as? String)
            let reply = try await harness.get(url)
            #expect(reply.status == .ok)
            #expect(reply.headers[.xContentTypeOptions] == "nosniff")
            #expect(reply.headers[.contentDisposition] == "attachment")
            #expect(reply.headers[.contentSecurityPolicy] == "sandbox")
        }
    }

    @Test("one attested key cannot flood delivery: past its budget it gets 429 with Retry-After; another key is unaffected")
    func perKeyLimit() async throws {
        try await DeliveryHarness.run { harness in
            let revision = try await harness.upload(["ok": true], version: "*")
            let token = try await harness.app.attest(with: harness.auth).accessToken
            try await harness.waitUntilServed(version: "1.0", revision: revision, token: token)
            var limited: DeliveryHarness.Reply?
            for _ in 0..<400 {
                let reply = try await harness.fetch(version: "1.0", token: token)
                if reply.status == .tooManyRequests {
                    limited = reply
                    break
                }
            }
            let refused = try #require(limited, "400 requests of one key were all served")
            #expect(refused.errorCode == "rate_limited")
            #expect(Int(refused.headers[.retryAfter] ?? "") ?? 0 >= 1)
            let other = try await harness.app.attest(with: harness.auth).accessToken
            #expect(try await harness.fetch(version: "1.0", token: other).status == .ok)
        }
    }
}

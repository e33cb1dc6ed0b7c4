import Crypto
@testable import DeliveryService
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOFoundationEssentialsCompat
import SesameDomain
import SesameTestSupport
import Testing

@Suite("Delivery: blob links", .timeLimit(.minutes(2)))
struct BlobLinkTests {
    @Test("a link serves the exact bytes, ranges give 206 slices, and an altered link is 403")
    func servedThroughLinks() async throws {
        try await DeliveryHarness.run { harness in
            let token = try await harness.app.attest(with: harness.auth).accessToken
            let bytes = (0..<(3 * 1024 * 1024 + 17)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
            let put = try await harness.admin.execute(
                uri: "/v1/admin/blob/model.bin", method: .put,
                headers: [.authorization: "Bearer \(harness.key)", .contentType: "application/octet-stream"], body: ByteBuffer(bytes: bytes)
            ) { $0.status }
            #expect(put == .ok)

            let delivery = harness.deliveries[0]
            let link = try await delivery.execute(uri: "/v1/blob/model.bin", method: .get, headers: [.authorization: "Bearer \(token)"]) {
                try JSONSerialization.jsonObject(with: Data(buffer: $0.body)) as? [String: Any]
            }
            let url = try #require(link?["url"] as? String)
            #expect(link?["expiresIn"] as? Int == 300)
            // What the app checks the download against.
            #expect(link?["sizeBytes"] as? Int == bytes.count)
            #expect(link?["sha256"] as? String == SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined())
            #expect(link?["contentType"] as? String == "application/octet-stream")
            #expect(try await delivery.execute(uri: "/v1/blob/missing.bin", method: .get, headers: [.authorization: "Bearer \(token)"]) { $0.status } == .notFound)
            #expect(try await delivery.execute(uri: "/v1/blob/model.bin", method: .get) { $0.status } == .unauthorized)

            let whole = try await delivery.execute(uri: url, method: .get) { ($0.status, Array($0.body.readableBytesView)) }
            #expect(whole.0 == .ok)
            #expect(whole.1 == bytes)

            let slice = try await delivery.execute(uri: url, method: .get, headers: [.range: "bytes=1048570-1048589"]) {
                ($0.status, $0.headers[.contentRange], Array($0.body.readableBytesView))
            }
            #expect(slice.0 == .partialContent)
            #expect(slice.1 == "bytes 1048570-1048589/\(bytes.count)")
            #expect(slice.2 == Array(bytes[1_048_570...1_048_589]))
            let suffix = try await delivery.execute(uri: url, method: .get, headers: [.range: "bytes=-5"]) { Array($0.body.readableBytesView) }
            #expect(suffix == Array(bytes.suffix(5)))
            #expect(try await delivery.execute(uri: url, method: .get, headers: [.range: "bytes=999999999-"]) { $0.status } == .rangeNotSatisfiable)

            // Any edit of the link breaks it: another blob, another app, a later expiry, another signature.
            for altered in [
                url.replacingOccurrences(of: "model.bin", with: "other.bin"),
                url.replacingOccurrences(of: "com.example.app", with: "com.example.evil"),
                url.replacingOccurrences(of: "expires=", with: "expires=9"),
                url.replacingOccurrences(of: "iat=", with: "iat=9"),
                url.replacingOccurrences(of: "sub=", with: "sub=x"),
                url.replacingOccurrences(of: "tier=attested", with: "tier=debug"),
                String(url.dropLast(2)) + "AA",
            ] {
                #expect(try await delivery.execute(uri: altered, method: .get) { $0.status } == .forbidden, "\(altered)")
            }
        }
    }

    @Test("links expire, and only the key that signed them opens them")
    func expiry() {
        let links = BlobLinks(key: SymmetricKey(size: .bits256))
        let grant = BlobLinks.Grant(
            appID: "A.b", blobKey: "k", expires: Int64(Date().timeIntervalSince1970) + 60, tokenVersion: "2.1.3", tokenIssuedAt: 1_800_000_000.25,
            subject: "device", tier: .attested)
        let signature = links.signature(grant)
        #expect(links.isValid(grant, signature: signature))
        #expect(!links.isValid(grant, signature: signature, now: Date().addingTimeInterval(61)))
        #expect(!BlobLinks(key: SymmetricKey(size: .bits256)).isValid(grant, signature: signature))
        // The token facts are signed too: a link cannot be moved to another version, issue time, install or tier.
        func altered(version: String? = "2.1.3", issuedAt: Double? = nil, subject: String = "device", tier: TrustTier = .attested) -> BlobLinks.Grant {
            BlobLinks.Grant(
                appID: "A.b", blobKey: "k", expires: grant.expires, tokenVersion: version, tokenIssuedAt: issuedAt ?? grant.tokenIssuedAt,
                subject: subject, tier: tier)
        }
        #expect(links.isValid(altered(), signature: signature))
        for altered in [
            altered(version: "3.0.0"), altered(version: nil), altered(issuedAt: grant.tokenIssuedAt + 1), altered(subject: "other"),
            altered(tier: .debug),
        ] {
            #expect(!links.isValid(altered, signature: signature))
        }
        #expect(BlobRoutes.parseRange("bytes=0-0", size: 10)! == (0, 0))
        #expect(BlobRoutes.parseRange("bytes=5-100", size: 10)! == (5, 9))
        #expect(BlobRoutes.parseRange("bytes=0-1,3-4", size: 10) == nil)
        #expect(BlobRoutes.parseRange("bytes=4-2", size: 10) == nil)
    }

    @Test("a link stops at once when its install is revoked, or when the policy raises blobs above its tier")
    func linksFollowTheirToken() async throws {
        try await DeliveryHarness.run { harness in
            let put = try await harness.admin.execute(
                uri: "/v1/admin/blob/model.bin", method: .put,
                headers: [.authorization: "Bearer \(harness.key)", .contentType: "application/octet-stream"], body: ByteBuffer(bytes: [1, 2, 3])
            ) { $0.status }
            #expect(put == .ok)
            let victim = try await harness.app.attest(with: harness.auth).accessToken
            let victimURL = try #require(try await harness.blobLink("model.bin", token: victim).json["url"] as? String)
            #expect(try await harness.get(victimURL).status == .ok)
            let keyID = try #require(try TrustTierTests.claims(of: victim)["sub"] as? String)
            #expect(try await harness.manageReply(.post, "devices/revoke", ["keyId": keyID, "reason": "stolen"]).status == .ok)
            for instance in harness.deliveries.indices {
                try await eventually("delivery \(instance) refuses the revoked install's link") {
                    try await harness.get(victimURL, instance: instance).errorCode == "token_revoked"
                }
            }

            // A debug token's link, while blobs are open to the debug tier, then not.
            var policy = try #require(try await harness.manage(.get, "policy", [:])["policy"] as? [String: Any])
            policy["blobTier"] = "debug"
            let debugToken = try #require(try await harness.manage(.post, "debug-tokens", ["name": "ci", "ttl": "1h"])["debugToken"] as? String)
            let debugAccess = try #require(try await harness.exchangeDebugToken(debugToken).json["accessToken"] as? String)
            try await harness.setPolicy(policy) { instance in
                try await harness.blobLink("model.bin", token: debugAccess, instance: instance).status == .ok
            }
            let debugURL = try #require(try await harness.blobLink("model.bin", token: debugAccess).json["url"] as? String)
            #expect(try await harness.get(debugURL).status == .ok)
            policy["blobTier"] = "attested"
            try await harness.setPolicy(policy) { instance in
                try await harness.get(debugURL, instance: instance).errorCode == "tier_insufficient"
            }
        }
    }
}

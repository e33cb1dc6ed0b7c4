import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import SesameKit
import SesameKitTesting
import SesameTestSupport
import Testing

/// SesameKit against the real services: auth trusting a `SoftwareAttestationAuthority`, admin and
/// two delivery instances on a fresh database, reached over HTTP with `URLSessionTransport`.
@Suite("SesameKit against the live suite", .timeLimit(.minutes(3)))
struct SesameKitLiveTests {
    /// Sends `/v1/auth/…` to auth and everything else to the first delivery instance, as the
    /// gateway would.
    struct GatewayTransport: HTTPTransport {
        let authPort: Int
        let deliveryPort: Int
        let transport = URLSessionTransport()

        func send(_ request: HTTPExchange.Request) async throws -> HTTPExchange.Response {
            var routed = request
            var components = URLComponents(url: request.url, resolvingAgainstBaseURL: false)!
            components.scheme = "http"
            components.host = "127.0.0.1"
            components.port = request.url.path.hasPrefix("/v1/auth/") ? authPort : deliveryPort
            routed.url = components.url!
            return try await transport.send(routed)
        }
    }

    /// A launch of the app on one device: `device` holds its App Attest keys, `store` its Keychain.
    static func client(_ harness: DeliveryHarness, device: SoftwareAppAttest, store: any SecureStore) throws -> SesameClient {
        SesameClient(
            configuration: SesameClient.Configuration(
                baseURL: URL(string: "https://sesame.invalid")!, teamID: DeliveryHarness.teamID, bundleID: DeliveryHarness.bundleID,
                appVersion: "2.1.3"),
            attestation: device,
            store: store,
            transport: GatewayTransport(authPort: try #require(harness.auth.port), deliveryPort: try #require(harness.deliveries[0].port)))
    }

    @Test("attest, fetch, refresh with an assertion on a new launch, a kill switch with its reason, and re-attestation after a revocation")
    func wholeLife() async throws {
        let authority = SoftwareAttestationAuthority()
        try await DeliveryHarness.run(extraRootsPEM: authority.rootCertificatePEM) { harness in
            let revision = try await harness.upload(["api_keys": ["stripe": "sk_live_kit"], "features": ["x": true]], version: "2.*")
            let store = InMemorySecureStore()
            let device = SoftwareAppAttest(appID: "\(DeliveryHarness.teamID).\(DeliveryHarness.bundleID)", authority: authority)

            // First launch: the software attester's key is attested by the real verifier.
            let first = try Self.client(harness, device: device, store: store)
            // The upload reaches delivery over Kafka: until then the app is told there is no config.
            var fetched: SesameConfig?
            try await eventually(timeout: .seconds(10), "the upload reaches delivery") {
                fetched = try? await first.fetchConfig(scope: ["api_keys.stripe"])
                return fetched != nil
            }
            let config = try #require(fetched)
            #expect(config.string("api_keys.stripe") == "sk_live_kit")
            #expect(config.value("features") == nil)
            #expect(config.source == .network && config.revision == Int64(revision) && config.matchedPattern == "2.*")
            let attestedKey = try #require(try store.data(for: "sesame.appAttestKeyID"))

            // A new launch over the same store: a refresh with an assertion, no new attestation.
            let second = try Self.client(harness, device: device, store: store)
            #expect(try await second.fetchConfig().bool("features.x") == true)
            #expect(try store.data(for: "sesame.appAttestKeyID") == attestedKey)

            // A blob larger than one range request, checked against the size and digest delivery announces.
            let blob = Data((0..<(SesameClient.blobRangeBytes + 1_000)).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 1) })
            let stored = try await harness.admin.execute(
                uri: "/v1/admin/blob/model.bin", method: .put,
                headers: [.authorization: "Bearer \(harness.key)", .contentType: "application/octet-stream"], body: ByteBuffer(bytes: Array(blob))
            ) { $0.status }
            #expect(stored == .ok)
            #expect(try await second.blob("model.bin") == blob)

            // Kill switch: the admin's reason reaches the app, and nothing of the version is served after.
            _ = try await harness.manage(.post, "kill-switch", ["versions": ["2.1.*"], "enabled": false, "reason": "Update to keep going."])
            try await eventually(timeout: .seconds(10), "the kill switch reaches delivery") {
                do {
                    _ = try await second.fetchConfig()
                    return false
                } catch let error as SesameError {
                    return error == .versionDisabled(reason: "Update to keep going.")
                }
            }
            _ = try await harness.manage(.post, "kill-switch", ["versions": ["2.1.*"], "enabled": true])

            // Emergency revocation: the next fetch re-attests with a new key, nothing for the app to do.
            _ = try await harness.manage(.post, "emergency-revoke", ["version": "2.*"])
            try await eventually(timeout: .seconds(10), "served again after the revocation, with a new key") {
                guard (try? await second.fetchConfig())?.source == .network else { return false }
                return try store.data(for: "sesame.appAttestKeyID") != attestedKey
            }
        }
    }
}

import Crypto
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NIOFoundationEssentialsCompat
@testable import SesameKit
import SesameKitTesting
import SesameTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// SesameKit against the real services: auth trusting a `SoftwareAttestationAuthority`, admin and
/// two delivery instances on a fresh database, reached over HTTP with `URLSessionTransport`.
@Suite("SesameKit against the live suite", .timeLimit(.minutes(3)))
struct SesameKitLiveTests {
    /// Sends `/v1/auth/…` to auth and everything else to the first delivery instance, as the
    /// gateway would.
    struct GatewayTransport: HTTPStreamingTransport {
        let authPort: Int
        let deliveryPort: Int
        let transport = URLSessionTransport()

        func send(_ request: HTTPExchange.Request) async throws -> HTTPExchange.Response {
            try await transport.send(routed(request))
        }

        func stream(_ request: HTTPExchange.Request) async throws -> (HTTPExchange.Response, AsyncThrowingStream<Data, any Error>) {
            try await transport.stream(routed(request))
        }

        private func routed(_ request: HTTPExchange.Request) -> HTTPExchange.Request {
            var routed = request
            var components = URLComponents(url: request.url, resolvingAgainstBaseURL: false)!
            components.scheme = "http"
            components.host = "127.0.0.1"
            components.port = request.url.path.hasPrefix("/v1/auth/") ? authPort : deliveryPort
            routed.url = components.url!
            return routed
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

    /// A fresh install of the app: a new software device under `authority`, an empty Keychain.
    static func newInstall(_ harness: DeliveryHarness, authority: SoftwareAttestationAuthority) throws -> SesameClient {
        let device = SoftwareAppAttest(appID: "\(DeliveryHarness.teamID).\(DeliveryHarness.bundleID)", authority: authority)
        return try client(harness, device: device, store: InMemorySecureStore())
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

    @Test("an API token for the app's own API: for a listed audience, bound to a value by its SHA-256; an unlisted one is refused")
    func apiToken() async throws {
        let authority = SoftwareAttestationAuthority()
        try await DeliveryHarness.run(extraRootsPEM: authority.rootCertificatePEM) { harness in
            _ = try await harness.manage(.put, "policy", ["apiAudiences": ["https://api.example.com"]])
            let client = try Self.newInstall(harness, authority: authority)
            let session = Data("session-1234".utf8)
            let token = try await client.apiToken(boundTo: session)
            #expect(token.audience == "https://api.example.com")
            #expect(token.authorizationHeader == "Bearer " + token.token)
            #expect(abs(token.expiresAt.timeIntervalSinceNow - 300) < 30)
            let payload = try #require(token.token.split(separator: ".").dropFirst().first.flatMap { Self.base64URLDecoded(String($0)) })
            let claims = try #require(try JSONSerialization.jsonObject(with: payload) as? [String: Any])
            #expect(claims["bnd"] as? String == SesameClient.base64URL(Data(SHA256.hash(data: session))))
            #expect(String(data: payload, encoding: .utf8)?.contains("session-1234") == false)
            do {
                _ = try await client.apiToken(for: "https://evil.example.com")
                Issue.record("an unlisted audience got a token")
            } catch let error as SesameError {
                guard case .server(let code, _) = error else {
                    Issue.record("\(error)")
                    return
                }
                #expect(code == "audience_not_allowed")
            }
        }
    }

    @Test("a single-use token for a sensitive action: the app's backend redeems it once with a backend key; a replay is refused")
    func limitedUseToken() async throws {
        let authority = SoftwareAttestationAuthority()
        try await DeliveryHarness.run(extraRootsPEM: authority.rootCertificatePEM) { harness in
            _ = try await harness.manage(.put, "policy", ["apiAudiences": ["https://api.example.com"]])
            let backendKey = try #require(try await harness.manage(.post, "backend-keys", ["name": "purchases"])["backendKey"] as? String)
            let client = try Self.newInstall(harness, authority: authority)
            let order = Data(#"{"sku":"gold","quantity":1}"#.utf8)
            let token = try await client.limitedUseToken(boundTo: order)
            #expect(token.isLimitedUse)
            #expect(try await client.apiToken().isLimitedUse == false)

            func consume() async throws -> (status: HTTPResponse.Status, json: [String: Any]) {
                try await harness.auth.execute(
                    uri: "/v1/verify/consume", method: .post,
                    headers: [.authorization: "Bearer \(backendKey)", .contentType: "application/json"],
                    body: ByteBuffer(data: try JSONSerialization.data(withJSONObject: ["token": token.token, "audience": token.audience]))
                ) { ($0.status, try JSONSerialization.jsonObject(with: Data(buffer: $0.body)) as? [String: Any] ?? [:]) }
            }
            let first = try await consume()
            #expect(first.status == .ok, "\(first.json)")
            // The backend holds the token to the order it came with.
            #expect(first.json["bnd"] as? String == SesameClient.base64URL(Data(SHA256.hash(data: order))))
            let replay = try await consume()
            #expect(replay.status == .conflict && (replay.json["error"] as? [String: Any])?["code"] as? String == "already_consumed")
        }
    }

    @Test("an assertion for a sensitive action: the backend has Sesame check it once; a replay is refused")
    func assertionForAction() async throws {
        let authority = SoftwareAttestationAuthority()
        try await DeliveryHarness.run(extraRootsPEM: authority.rootCertificatePEM) { harness in
            let backendKey = try #require(try await harness.manage(.post, "backend-keys", ["name": "purchases"])["backendKey"] as? String)
            let client = try Self.newInstall(harness, authority: authority)
            let order = Data(#"{"sku":"gold","quantity":1}"#.utf8)
            let signed = try await client.assertion(for: order)
            #expect(signed.clientData == order && signed.headers["X-App-Attest-Key-Id"] == signed.keyID)

            func check(_ body: [String: String]) async throws -> (status: HTTPResponse.Status, json: [String: Any]) {
                try await harness.auth.execute(
                    uri: "/v1/verify/assertion", method: .post,
                    headers: [.authorization: "Bearer \(backendKey)", .contentType: "application/json"],
                    body: ByteBuffer(data: try JSONSerialization.data(withJSONObject: body))
                ) { ($0.status, try JSONSerialization.jsonObject(with: Data(buffer: $0.body)) as? [String: Any] ?? [:]) }
            }
            let first = try await check(signed.verificationBody)
            #expect(first.status == .ok, "\(first.json)")
            #expect(first.json["app"] as? String == "\(DeliveryHarness.teamID).\(DeliveryHarness.bundleID)")
            #expect((try await check(signed.verificationBody)).status == .unauthorized)
            // A later action's assertion passes: the counter moved on.
            #expect((try await check(try await client.assertion(for: order).verificationBody)).status == .ok)
        }
    }

    @Test("relay proofs made by SesameKit pass the real relay: a single-use token for the relay (no API audience listed) and an assertion over the call, each once; a backend cannot redeem the relay's token")
    func relayProofs() async throws {
        let authority = SoftwareAttestationAuthority()
        try await TestUpstream.run { upstream in
            try await DeliveryHarness.run(extraRootsPEM: authority.rootCertificatePEM) { harness in
                for (name, proof) in [("single", "limitedUseToken"), ("asserted", "assertion")] {
                    let made = try await harness.manageReply(.put, "relays/\(name)", [
                        "upstream": "http://127.0.0.1:\(upstream.port)/base", "methods": ["POST"], "paths": ["/echo/*"], "proof": proof,
                        "headers": ["X-Api-Key": "sk-relay"],
                    ])
                    #expect(made.status == .ok, "\(made.json)")
                }
                let client = try Self.newInstall(harness, authority: authority)
                for (name, proof) in [("single", SesameRelay.Proof.limitedUseToken), ("asserted", .assertion)] {
                    let relay = client.relay(name, proof: proof)
                    // A query with an encoded slash: the proof states it as sent.
                    var request = URLRequest(url: try #require(URL(string: relay.baseURL.absoluteString + "/echo/buy?item=7&note=a%2Fb")))
                    request.httpMethod = "POST"
                    request.httpBody = Data(#"{"sku":"gold"}"#.utf8)
                    var answer: (Data, HTTPURLResponse)?
                    try await eventually(timeout: .seconds(10), "relay \(name) is served") {
                        do { answer = try await relay.data(for: request) } catch let error as SesameError {
                            guard case .server(let code, _) = error, code == "relay_not_found" else { throw error }
                        }
                        return answer != nil
                    }
                    let (body, response) = try #require(answer)
                    #expect(response.statusCode == 201, "\(name): \(String(decoding: body, as: UTF8.self))")
                    let echoed = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
                    #expect(echoed["query"] as? String == "item=7&note=a%2Fb" && echoed["body"] as? String == #"{"sku":"gold"}"#, "\(echoed)")
                    // A second call makes a proof of its own.
                    #expect(try await relay.data(for: request).1.statusCode == 201)
                }

                let backendKey = try #require(try await harness.manage(.post, "backend-keys", ["name": "purchases"])["backendKey"] as? String)
                let relayToken = try await client.limitedUseToken(for: "sesame-relay:single", boundTo: Data("order".utf8))
                let redeemed = try await harness.auth.execute(
                    uri: "/v1/verify/consume", method: .post, headers: [.authorization: "Bearer \(backendKey)", .contentType: "application/json"],
                    body: ByteBuffer(data: try JSONSerialization.data(withJSONObject: ["token": relayToken.token]))
                ) { ($0.status, String(buffer: $0.body)) }
                #expect(redeemed.0 == .forbidden && redeemed.1.contains("audience_mismatch"), "\(redeemed)")
            }
        }
    }

    static func base64URLDecoded(_ text: String) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }

    @Test("live config: a running app gets a new revision pushed within seconds, and a kill switch ends its updates with the reason")
    func liveUpdates() async throws {
        let authority = SoftwareAttestationAuthority()
        try await DeliveryHarness.run(extraRootsPEM: authority.rootCertificatePEM) { harness in
            _ = try await harness.upload(["features": ["checkout": false]], version: "2.*")
            let client = try Self.newInstall(harness, authority: authority)
            try await eventually(timeout: .seconds(10), "the upload reaches delivery") { (try? await client.fetchConfig()) != nil }

            var updates = client.updates(scope: ["features"]).makeAsyncIterator()
            let first = try #require(try await updates.next())
            #expect(first.bool("features.checkout") == false)
            let published = ContinuousClock.now
            let revision = try await harness.upload(["features": ["checkout": true]], version: "2.*")
            let pushed = try #require(try await updates.next())
            #expect(pushed.bool("features.checkout") == true && pushed.revision == Int64(revision) && pushed.source == .network)
            // Pushed, not polled: well under the config's freshness and SesameKit's one-minute poll.
            #expect(ContinuousClock.now - published < .seconds(5))
            #expect(pushed.rollout == nil)

            // A staged rollout widened to every install reaches the running app, which says so.
            let staged = try await harness.manage(.post, "config/upload", ["version": "2.*", "config": ["features": ["checkout": "staged"]], "rollout": 0])
            let rollout = try #require(staged["rollout"] as? [String: Any])
            _ = try await harness.manage(.post, "config/rollout", ["version": "2.*", "action": "widen", "percent": 100])
            let widened = try #require(try await updates.next())
            #expect(widened.string("features.checkout") == "staged")
            #expect(widened.rollout == SesameConfig.Rollout(id: try #require(rollout["id"] as? String), included: true))

            _ = try await harness.manage(.post, "kill-switch", ["versions": ["2.1.*"], "enabled": false, "reason": "Update to keep going."])
            await #expect(throws: SesameError.versionDisabled(reason: "Update to keep going.")) {
                while try await updates.next() != nil {}
            }
        }
    }

    @Test("a view's SesameLiveConfig, on the main actor, follows a publish from the live suite; two of them share one stream")
    func liveObject() async throws {
        let authority = SoftwareAttestationAuthority()
        try await DeliveryHarness.run(extraRootsPEM: authority.rootCertificatePEM) { harness in
            _ = try await harness.upload(["features": ["checkout": false]], version: "2.*")
            let client = try Self.newInstall(harness, authority: authority)
            try await eventually(timeout: .seconds(10), "the upload reaches delivery") { (try? await client.fetchConfig()) != nil }

            let (first, second) = await MainActor.run { (SesameLiveConfig(client: client), SesameLiveConfig(client: client)) }
            #expect(await MainActor.run { first.config?.bool("features.checkout") == false })
            let revision = try await harness.upload(["features": ["checkout": true]], version: "2.*")
            try await eventually(timeout: .seconds(5), "the publish reaches both views") {
                await MainActor.run { first.config?.revision == Int64(revision) && second.config?.revision == Int64(revision) }
            }
            #expect(await MainActor.run { first.bool("features.checkout", default: false) && second.bool("features.checkout", default: false) })
            #expect(client.liveConfigs.withLock { $0.count } == 1)
        }
    }
}

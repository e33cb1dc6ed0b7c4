import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import NIOFoundationEssentialsCompat
import PostgresNIO
import SesameDomain
import SesameTestSupport
import Synchronization
import Testing

@testable import AdminService

/// An HTTP endpoint the tests' webhooks post to: it keeps what it received and answers the
/// status it is told to.
final class WebhookReceiver: Sendable {
    struct Received: Sendable {
        let headers: HTTPFields
        let body: Data
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:] }
    }

    let received = Mutex<[Received]>([])
    let status = Mutex<HTTPResponse.Status>(.ok)
    /// How long each post waits before it is answered.
    let delay = Mutex<Duration>(.zero)

    var all: [Received] { received.withLock { $0 } }

    /// Runs the receiver on 127.0.0.1 while `body` runs; `body` gets its URL.
    func run(_ body: @Sendable (String) async throws -> Void) async throws {
        let router = Router()
        router.post("hook") { request, _ -> Response in
            let bytes = try await request.body.collect(upTo: 1 << 20)
            try await Task.sleep(for: self.delay.withLock { $0 })
            let answer = self.status.withLock { $0 }
            if answer == .ok { self.received.withLock { $0.append(Received(headers: request.headers, body: Data(buffer: bytes))) } }
            return Response(status: answer)
        }
        try await Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0))).test(.live) { client in
            try await body("http://127.0.0.1:\(try #require(client.port))/hook")
        }
    }
}

@Suite("Admin: webhooks", .timeLimit(.minutes(3)))
struct WebhookTests {
    static func register(_ harness: AdminHarness, key: String, _ body: [String: Any]) async throws -> (id: String, secret: String) {
        let reply = try await harness.call(.post, "/v1/admin/webhooks", credential: key, json: body)
        #expect(reply.status == .ok, "\(reply.json)")
        return (try #require(reply["id"] as? String), try #require(reply["secret"] as? String))
    }

    static func waitFor(_ receiver: WebhookReceiver, count: Int, timeout: Duration = .seconds(20)) async throws -> [WebhookReceiver.Received] {
        try await eventually(timeout: timeout, "\(count) webhook deliveries") { receiver.all.count >= count }
        return receiver.all
    }

    @Test("changes reach the webhook signed, in order, with their audit chain hash; unsubscribed events and reads are not sent")
    func deliveries() async throws {
        let receiver = WebhookReceiver()
        try await receiver.run { url in
            try await AdminHarness.run(outboundAllowances: "webhook=127.0.0.1:*@*") { harness in
                let key = try await harness.createKey()
                let (_, secret) = try await Self.register(harness, key: key, ["url": url, "events": ["config.published", "kill_switch"]])
                #expect(secret.hasPrefix("whsec_"))
                _ = try await harness.upload(["a": 1], version: "*", key: key)
                _ = try await harness.call(.get, "/v1/admin/config/body?version=*", credential: key)  // a read: not an event
                let killed = try await harness.call(.post, "/v1/admin/kill-switch", credential: key, json: ["versions": ["1.0.0"], "enabled": false, "reason": "update"])
                #expect(killed.status == .ok, "\(killed.json)")
                _ = try await harness.call(.post, "/v1/admin/keys/revoke", credential: key, json: ["keyId": "none"])  // not subscribed
                _ = try await harness.upload(["a": 2], version: "*", key: key)

                let received: [WebhookReceiver.Received]
                do {
                    received = try await Self.waitFor(receiver, count: 3)
                } catch {
                    let hooks = try await harness.call(.get, "/v1/admin/webhooks", credential: key)
                    Issue.record("received \(receiver.all.map { $0.headers[HTTPField.Name("Sesame-Event")!] ?? "?" }); webhooks: \(hooks.json)")
                    throw error
                }
                #expect(received.map { $0.headers[HTTPField.Name("Sesame-Event")!] } == ["config.published", "kill_switch", "config.published"])
                #expect(received.map { $0.json["revision"] as? Int } == [1, nil, 2])
                for delivery in received {
                    // The signature: t=<seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>, within five minutes.
                    let header = try #require(delivery.headers[HTTPField.Name("Sesame-Signature")!])
                    let parts = Dictionary(uniqueKeysWithValues: header.split(separator: ",").map { $0.split(separator: "=", maxSplits: 1).map(String.init) }.map { ($0[0], $0[1]) })
                    let seconds = try #require(parts["t"].flatMap { Int64($0) })
                    #expect(abs(Double(seconds) - Date().timeIntervalSince1970) < 300)
                    let expected = HMAC<SHA256>.authenticationCode(for: Data("\(seconds).".utf8) + delivery.body, using: SymmetricKey(data: Data(secret.utf8)))
                    #expect(parts["v1"] == Hex.encode(expected))
                    let audit = try #require(delivery.json["audit"] as? [String: Any])
                    #expect((audit["hash"] as? String)?.count == 64)
                }
                // The newest delivery's hash is the chain's head once nothing newer happened.
                let verdict = try await harness.call(.get, "/v1/admin/audit/verify", credential: key)
                let lastHash = (received.last?.json["audit"] as? [String: Any])?["hash"] as? String
                let reaches = try await harness.call(.get, "/v1/admin/audit/verify?head=\(try #require(lastHash))", credential: key)
                #expect(verdict["intact"] as? Bool == true && reaches["reachesHead"] as? Bool == true)

                let listed = try await harness.call(.get, "/v1/admin/webhooks", credential: key)
                let hook = try #require((listed["webhooks"] as? [[String: Any]])?.first)
                #expect(hook["delivered"] as? Int == 3 && hook["lastStatus"] as? Int == 200 && hook["secret"] == nil)
                #expect(!String(decoding: listed.body, as: UTF8.self).contains(secret))
            }
        }
    }

    @Test("app A's five webhooks that hang do not delay app B's: B's delivery arrives within seconds of its change")
    func slowEndpointsDoNotStarveOthers() async throws {
        let slow = WebhookReceiver()
        slow.delay.withLock { $0 = .seconds(15) }
        let fast = WebhookReceiver()
        try await slow.run { slowURL in
            try await fast.run { fastURL in
                try await AdminHarness.run(outboundAllowances: "webhook=127.0.0.1:*@*") { harness in
                    let keyA = try await harness.createKey()
                    let keyB = try await harness.createKey(bundleID: "com.example.other")
                    for _ in 0..<5 { _ = try await Self.register(harness, key: keyA, ["url": slowURL]) }
                    _ = try await Self.register(harness, key: keyB, ["url": fastURL])
                    for round in 0..<3 { _ = try await harness.upload(["a": round], version: "*", key: keyA) }
                    // A's webhooks are now posting to an endpoint that never answers in time.
                    try await Task.sleep(for: .seconds(1))
                    let start = ContinuousClock.now
                    _ = try await harness.upload(["b": 1], version: "*", key: keyB)
                    _ = try await Self.waitFor(fast, count: 1, timeout: .seconds(30))
                    let delay = ContinuousClock.now - start
                    #expect(delay < .seconds(4), "app B's delivery waited \(delay) behind app A's")
                    #expect(WebhookStore.redacted(slowURL).hasSuffix("/…") && !WebhookStore.redacted(slowURL).contains("hook"))
                    let audit = try await harness.database.query("SELECT details::text FROM audit_log WHERE action = 'webhook.create'")
                    for try await details in audit.decode(String.self) { #expect(!details.contains("/hook"), "a webhook URL's path reached the audit log") }
                }
            }
        }
    }

    @Test("a receiver that fails is retried with backoff and gets every event once it recovers, in order")
    func retries() async throws {
        let receiver = WebhookReceiver()
        receiver.status.withLock { $0 = .serviceUnavailable }
        try await receiver.run { url in
            try await AdminHarness.run(outboundAllowances: "webhook=127.0.0.1:*@*") { harness in
                let key = try await harness.createKey()
                _ = try await Self.register(harness, key: key, ["url": url, "format": "slack"])
                _ = try await harness.upload(["a": 1], version: "*", key: key)
                _ = try await harness.upload(["a": 2], version: "2.*", key: key)
                try await eventually(timeout: .seconds(20), "a failed attempt recorded") {
                    let hook = (try await harness.call(.get, "/v1/admin/webhooks", credential: key)["webhooks"] as? [[String: Any]])?.first
                    return hook?["lastStatus"] as? Int == 503 && (hook?["attempts"] as? Int ?? 0) >= 1 && hook?["nextAttemptAt"] as? String != nil
                }
                #expect(receiver.all.isEmpty)
                receiver.status.withLock { $0 = .ok }
                let received = try await Self.waitFor(receiver, count: 2, timeout: .seconds(30))
                let texts = received.map { $0.json["text"] as? String ?? "" }
                #expect(texts.count == 2 && texts[0].contains("config.published") && texts[0].contains("`*`") && texts[1].contains("`2.*`"), "\(texts)")
            }
        }
    }

    @Test("a webhook to an internal address, over plain http, or for an unknown event is refused; only owners manage them; removal stops deliveries")
    func refusals() async throws {
        try await AdminHarness.run { harness in
            let key = try await harness.createKey()
            for url in ["http://127.0.0.1:9/hook", "https://10.0.0.5/hook", "https://169.254.169.254/latest", "https://[::1]/hook", "http://example.com/hook", "not a url"] {
                let refused = try await harness.call(.post, "/v1/admin/webhooks", credential: key, json: ["url": url])
                #expect(refused.status == .badRequest && refused.errorMessage?.contains("url") == true, "\(url): \(refused.json)")
            }
            let unknown = try await harness.call(.post, "/v1/admin/webhooks", credential: key, json: ["url": "https://hooks.example.com/x", "events": ["config.exploded"]])
            #expect(unknown.status == .badRequest && unknown.errorMessage?.contains("config.exploded") == true)

            // A name that resolves to an internal address passes registration but is refused at delivery.
            let (id, _) = try await Self.register(harness, key: key, ["url": "https://localhost/hook"])
            _ = try await harness.upload(["a": 1], version: "*", key: key)
            try await eventually(timeout: .seconds(20), "the delivery refused") {
                let hook = (try await harness.call(.get, "/v1/admin/webhooks", credential: key)["webhooks"] as? [[String: Any]])?.first
                return (hook?["lastError"] as? String)?.contains("internal address") == true
            }
            #expect(try await harness.call(.delete, "/v1/admin/webhooks/\(id)", credential: key).status == .ok)
            let again = try await harness.call(.delete, "/v1/admin/webhooks/\(id)", credential: key)
            #expect(again.status == .notFound && again.errorCode == "webhook_not_found")
            #expect((try await harness.call(.get, "/v1/admin/webhooks", credential: key)["webhooks"] as? [Any])?.isEmpty == true)
        }
    }
}

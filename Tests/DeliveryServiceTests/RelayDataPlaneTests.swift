import AdminService
@testable import DeliveryService
import AppAttestTesting
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import NIOFoundationCompat
import PostgresNIO
import SesameConfiguration
import SesameDomain
import SesameEncryption
import SesameKit
import SesameRelayProof
import SesameServer
import SesameStorage
import SesameTestSupport
import Testing

/// A local upstream for relays (plain http on 127.0.0.1, which the harness's outbound policy allows
/// in development): it echoes what it received, answers a teapot, sleeps, and streams server-sent
/// events whose second event waits for the test.
struct TestUpstream: Sendable {
    let port: Int
    /// Lets the `/base/sse` stream send its second event.
    let release: AsyncStream<Void>.Continuation

    static func run(_ body: @Sendable (TestUpstream) async throws -> Void) async throws {
        let (released, release) = AsyncStream<Void>.makeStream()
        let router = Router()
        router.on("base/echo/**", method: .post) { request, _ in try await echo(request) }
        router.on("base/echo/**", method: .get) { request, _ in try await echo(request) }
        router.get("base/teapot") { _, _ in
            Response(status: .init(code: 418), headers: [.contentType: "text/plain"], body: .init(byteBuffer: ByteBuffer(string: "short and stout")))
        }
        router.get("base/slow") { _, _ in
            try await Task.sleep(for: .seconds(3))
            return Response(status: .ok)
        }
        router.get("base/huge") { _, _ in
            // 64 MiB, a MiB at a time, as fast as it is taken: more than every buffer between the
            // relay and a caller that stopped reading.
            Response(
                status: .ok, headers: [.contentType: "application/octet-stream"],
                body: ResponseBody { writer in
                    let mebibyte = ByteBuffer(repeating: UInt8(ascii: "x"), count: 1 << 20)
                    for _ in 0..<64 { try await writer.write(mebibyte) }
                    try await writer.finish(nil)
                })
        }
        router.get("base/large") { _, _ in
            Response(status: .ok, body: .init(byteBuffer: ByteBuffer(repeating: UInt8(ascii: "x"), count: 4096)))
        }
        router.get("base/sse") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/event-stream"],
                body: ResponseBody { writer in
                    try await writer.write(ByteBuffer(string: "data: one\n\n"))
                    var iterator = released.makeAsyncIterator()
                    _ = await iterator.next()
                    try await writer.write(ByteBuffer(string: "data: two\n\n"))
                    try await writer.finish(nil)
                })
        }
        router.get("base/stall") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/event-stream"],
                body: ResponseBody { writer in
                    try await writer.write(ByteBuffer(string: "data: one\n\n"))
                    // Longer than the relay's time; short enough not to hold the server's shutdown long.
                    try await Task.sleep(for: .seconds(9))
                    try await writer.finish(nil)
                })
        }
        let server = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await server.test(.live) { client in
            try await body(TestUpstream(port: try #require(client.port), release: release))
        }
    }

    /// What the upstream received, as JSON; it sets a cookie the relay must not pass on.
    static func echo(_ request: Request) async throws -> Response {
        let body = try await request.body.collect(upTo: 1 << 20)
        var headers: [String: [String]] = [:]
        // Names as HTTPTypes keeps them: lowercase.
        for field in request.headers { headers[field.name.canonicalName, default: []].append(field.value) }
        let answer: [String: Any] = [
            "method": request.method.rawValue, "path": request.uri.path, "query": request.uri.query ?? "", "headers": headers,
            "body": String(buffer: body),
        ]
        return Response(
            status: request.method == .post ? .created : .ok,
            headers: [.contentType: "application/json", .setCookie: "session=upstream", HTTPField.Name("X-Upstream")!: "yes"],
            body: .init(byteBuffer: ByteBuffer(data: try JSONSerialization.data(withJSONObject: answer))))
    }
}

@Suite("Delivery: the attested relay's data plane", .timeLimit(.minutes(3)))
struct RelayDataPlaneTests {
    static let secret = "sk-relay-secret-0123456789"

    /// Makes relay `name` to the upstream and waits until both delivery instances serve it.
    static func setRelay(_ harness: DeliveryHarness, name: String, upstream: TestUpstream, token: String, _ extra: [String: Any] = [:]) async throws {
        let reply = try await harness.manageReply(.put, "relays/\(name)", relay(to: upstream, extra))
        #expect(reply.status == .ok || reply.status == .created, "\(reply.json)")
        try await waitUntilServed(harness, name: name, token: token)
    }

    /// The request that makes a relay to `upstream` injecting the two secret headers.
    static func relay(to upstream: TestUpstream, _ extra: [String: Any] = [:]) -> [String: Any] {
        var body: [String: Any] = [
            "upstream": "http://127.0.0.1:\(upstream.port)/base", "methods": ["GET", "POST"],
            "paths": ["/echo/*", "/echo/deep/**", "/teapot", "/slow", "/sse", "/stall", "/large", "/huge"],
            "headers": ["Authorization": "Bearer \(secret)", "X-Api-Key": "key-\(secret)"],
        ]
        body.merge(extra) { $1 }
        return body
    }

    static func waitUntilServed(_ harness: DeliveryHarness, name: String, token: String) async throws {
        for instance in harness.deliveries.indices {
            try await eventually("delivery \(instance) serves relay \(name)") {
                try await call(harness, .get, "/v1/relay/\(name)/teapot", token: token, instance: instance).status.code == 418
            }
        }
    }

    static func call(
        _ harness: DeliveryHarness, _ method: HTTPRequest.Method, _ uri: String, token: String?, headers: HTTPFields = [:], body: String? = nil,
        instance: Int = 0
    ) async throws -> (status: HTTPResponse.Status, headers: HTTPFields, body: String) {
        var headers = headers
        if let token { headers[.authorization] = "Bearer \(token)" }
        return try await harness.deliveries[instance].execute(uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) }) {
            ($0.status, $0.headers, String(buffer: $0.body))
        }
    }

    static func errorCode(_ body: String) -> String? {
        ((try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])?["error"] as? [String: Any])?["code"] as? String
    }

    @Test("the relay injects its headers over the caller's, drops the caller's credentials and hop-by-hop headers and Set-Cookie, passes the upstream's answers as they are; the secret in no answer or metric")
    func forwarding() async throws {
        try await TestUpstream.run { upstream in
            try await DeliveryHarness.run { harness in
                let token = try await harness.app.attest(with: harness.auth).accessToken
                try await Self.setRelay(harness, name: "llm", upstream: upstream, token: token)
                let sent: HTTPFields = [
                    .cookie: "theirs=1", HTTPField.Name("X-Api-Key")!: "spoofed", HTTPField.Name("X-Custom")!: "kept",
                    HTTPField.Name("X-Sesame-Identity-Token")!: "not-for-upstream", HTTPField.Name("X-Forwarded-For")!: "10.0.0.1",
                    .connection: "X-Drop-Me", HTTPField.Name("X-Drop-Me")!: "hop", .contentType: "application/json",
                ]
                let reply = try await Self.call(harness, .post, "/v1/relay/llm/echo/chat?stream=true&n=2", token: token, headers: sent, body: #"{"q":"hi"}"#)
                #expect(reply.status == .created)
                #expect(reply.headers[.setCookie] == nil)
                #expect(reply.headers[HTTPField.Name("X-Upstream")!] == "yes")
                #expect(reply.headers[HTTPField.Name("X-Sesame-Upstream")!] == "1")
                let echoed = try #require(try JSONSerialization.jsonObject(with: Data(reply.body.utf8)) as? [String: Any])
                #expect(echoed["method"] as? String == "POST")
                #expect(echoed["path"] as? String == "/base/echo/chat")
                #expect(echoed["query"] as? String == "stream=true&n=2")
                #expect(echoed["body"] as? String == #"{"q":"hi"}"#)
                let received = try #require(echoed["headers"] as? [String: [String]])
                #expect(received["authorization"] == ["Bearer \(Self.secret)"])
                #expect(received["x-api-key"] == ["key-\(Self.secret)"])
                #expect(received["x-custom"] == ["kept"])
                // (A header the caller's Connection names never reaches the route: NIO drops Connection when it
                // reads the request, so that rule of `RelayHeaders.forwarded` is held by the first layer's test.)
                for dropped in ["cookie", "x-sesame-identity-token", "x-forwarded-for", "connection"] {
                    #expect(received[dropped] == nil, "\(dropped) reached the upstream")
                }
                #expect(!received.values.flatMap { $0 }.contains(token), "the caller's access token reached the upstream")
                // The secret is the upstream's to see, not the caller's: only this echo returns it.
                let teapot = try await Self.call(harness, .get, "/v1/relay/llm/teapot", token: token)
                #expect(teapot.status.code == 418 && teapot.body == "short and stout")

                var refusals: [String] = []
                for (method, uri, status, code) in [
                    (HTTPRequest.Method.get, "/v1/relay/llm/other", 403, "relay_path_not_allowed"),
                    (.get, "/v1/relay/llm/echo/a/b", 403, "relay_path_not_allowed"),
                    (.get, "/v1/relay/llm/echo/..", 403, "relay_path_not_allowed"),
                    (.get, "/v1/relay/llm/echo/%2e%2e", 403, "relay_path_not_allowed"),
                    (.get, "/v1/relay/llm/echo/deep/../../teapot", 403, "relay_path_not_allowed"),
                    (.get, "/v1/relay/llm/echo/deep/a%2F..%2F..", 403, "relay_path_not_allowed"),
                    (.get, "/v1/relay/llm/echo//x", 403, "relay_path_not_allowed"),
                    (.delete, "/v1/relay/llm/echo/x", 405, "relay_method_not_allowed"),
                    (.get, "/v1/relay/nothing/echo/x", 404, "relay_not_found"),
                ] {
                    let refused = try await Self.call(harness, method, uri, token: token)
                    #expect(refused.status.code == status && Self.errorCode(refused.body) == code, "\(uri): \(refused.status) \(refused.body)")
                    #expect(refused.headers[HTTPField.Name("X-Sesame-Upstream")!] == nil, "a refusal marked as the upstream's")
                    refusals.append(refused.body)
                }
                let deepOK = try await Self.call(harness, .get, "/v1/relay/llm/echo/deep/a/b", token: token)
                #expect(deepOK.status == .ok, "\(deepOK.body)")
                #expect(try await Self.call(harness, .get, "/v1/relay/llm/teapot", token: nil).status == .unauthorized)
                let tooLarge = try await Self.call(harness, .post, "/v1/relay/llm/echo/x", token: token, body: String(repeating: "x", count: 2 << 20))
                #expect(tooLarge.status == .contentTooLarge && Self.errorCode(tooLarge.body) == "relay_request_too_large", "\(tooLarge.body)")
                // A proof this server cannot check yet is refused, never let through.
                #expect(try await harness.manageReply(.put, "relays/proven", [
                    "upstream": "http://127.0.0.1:\(upstream.port)/base", "methods": ["GET"], "paths": ["/teapot"], "headers": ["X-Key": "v"],
                    "proof": "limitedUseToken",
                ]).status == .ok)
                try await eventually("relay proven refused for its proof") {
                    Self.errorCode(try await Self.call(harness, .get, "/v1/relay/proven/teapot", token: token).body) == "relay_proof_required"
                }
                for body in refusals { #expect(!body.contains(Self.secret)) }
                let metrics = try await harness.deliveries[0].execute(uri: "/metrics", method: .get) { String(buffer: $0.body) }
                #expect(metrics.contains("sesame_relay_requests_total"))
                #expect(metrics.contains(#"outcome="relay_path_not_allowed""#))
                #expect(!metrics.contains(Self.secret))
            }
        }
    }

    @Test("a relay moved to another origin by a write to its row cannot open its headers: 503 relay_unusable on both replicas, nothing sent, the app's configs served; headers sealed before they were bound are bound when admin starts")
    func headersStayWithTheirOrigin() async throws {
        try await TestUpstream.run { upstream in
            try await TestUpstream.run { elsewhere in
                try await DeliveryHarness.run { harness in
                    let token = try await harness.app.attest(with: harness.auth).accessToken
                    let revision = try await harness.upload(["features": ["a": true]], version: "*")
                    try await Self.setRelay(harness, name: "llm", upstream: upstream, token: token)
                    // Anyone who can write the row points it at their own server: another port is another origin.
                    try await harness.database.query("UPDATE relays SET upstream = \("http://127.0.0.1:\(elsewhere.port)/base") WHERE name = 'llm'")
                    for instance in harness.deliveries.indices {
                        // Until the replica reloads it calls the first upstream; once reloaded, never the second.
                        try await eventually("delivery \(instance) refuses the moved relay") {
                            let reply = try await Self.call(harness, .post, "/v1/relay/llm/echo/x", token: token, body: "{}", instance: instance)
                            return reply.status == .serviceUnavailable && Self.errorCode(reply.body) == "relay_unusable"
                        }
                        let refused = try await Self.call(harness, .post, "/v1/relay/llm/echo/x", token: token, body: "{}", instance: instance)
                        #expect(refused.status == .serviceUnavailable && !refused.body.contains(Self.secret), "\(refused.body)")
                    }
                    try await harness.waitUntilServed(version: "1.0", revision: revision, token: token)
                    // Moved back, they open again.
                    try await harness.database.query("UPDATE relays SET upstream = \("http://127.0.0.1:\(upstream.port)/base") WHERE name = 'llm'")
                    try await Self.waitUntilServed(harness, name: "llm", token: token)

                    // Headers an earlier Sesame sealed bound to the relay's name only: unusable until admin binds them at its start.
                    let encryption = EnvelopeEncryption(keyring: try MasterKeyring(current: harness.configuration.masterKey.current))
                    let headers = try JSONEncoder().encode(["Authorization": "Bearer \(Self.secret)"])
                    let unbound = Data(
                        try encryption.seal(Array(headers), context: SealingContext.relayHeadersUnbound(appID: DeliveryHarness.appID, name: "legacy")))
                    try await harness.database.query(
                        """
                        INSERT INTO relays (app_id, name, upstream, methods, paths, header_names, headers_ciphertext, least_tier, proof,
                            max_request_bytes, max_response_bytes, timeout_seconds, updated_by)
                        VALUES (\(DeliveryHarness.appID), 'legacy', \("http://127.0.0.1:\(upstream.port)/base"), ARRAY['GET', 'POST'], ARRAY['/teapot', '/echo/*'],
                            ARRAY['Authorization'], \(unbound), 'attested', 'none', 1024, 4096, 5, 'an earlier version')
                        """)
                    try await eventually("the unbound relay is refused") {
                        Self.errorCode(try await Self.call(harness, .get, "/v1/relay/legacy/teapot", token: token).body) == "relay_unusable"
                    }
                    try await AdminService.buildApplication(configuration: harness.configuration).test(.live) { _ in
                        try await Self.waitUntilServed(harness, name: "legacy", token: token)
                    }
                    let echoed = try await Self.call(harness, .post, "/v1/relay/legacy/echo/x", token: token, body: "{}")
                    #expect(echoed.status == .created && echoed.body.contains("Bearer \(Self.secret)"), "\(echoed.body)")
                }
            }
        }
    }

    @Test("delivery checks the operator's allowances at each call: a relay whose internal upstream is opened to another app only is refused, nothing sent")
    func allowancesCheckedAtTheCall() async throws {
        try await TestUpstream.run { upstream in
            // Admin (where the relay is set) opens 127.0.0.1 to every app; delivery to another app only.
            try await DeliveryHarness.run(deliveryAllowances: "jwks=127.0.0.1:*@*,relay=127.0.0.1:*@OTHERTEAM.com.example.other") { harness in
                let token = try await harness.app.attest(with: harness.auth).accessToken
                let made = try await harness.manageReply(.put, "relays/llm", Self.relay(to: upstream))
                #expect(made.status == .ok, "\(made.json)")
                for instance in harness.deliveries.indices {
                    try await eventually("delivery \(instance) refuses the relay at the call") {
                        let reply = try await Self.call(harness, .post, "/v1/relay/llm/echo/x", token: token, body: "{}", instance: instance)
                        return reply.status == .badGateway && Self.errorCode(reply.body) == "relay_upstream_failed"
                    }
                    let teapot = try await Self.call(harness, .get, "/v1/relay/llm/teapot", token: token, instance: instance)
                    #expect(teapot.status == .badGateway && !teapot.body.contains("127.0.0.1"), "\(teapot.body)")
                }
            }
        }
    }

    @Test("an answer written to callers that stopped reading ends at the relay's time: their connections are closed and their call slots given back")
    func blockedWritesEndAtTheRelaysTime() async throws {
        try await TestUpstream.run { upstream in
            try await DeliveryHarness.run { harness in
                let token = try await harness.app.attest(with: harness.auth).accessToken
                try await Self.setRelay(harness, name: "llm", upstream: upstream, token: token, ["timeoutSeconds": 6, "maxResponseBytes": 100 << 20])
                let port = try #require(harness.deliveries[0].port)
                // An install's eight call slots, each held by a call whose caller reads nothing (two
                // more calls than slots: a slot the last check's answer still holds is not free yet).
                var stalled: [RawConnection] = []
                for _ in 0..<RelayCallSlots.defaultPerInstall + 2 {
                    let connection = try await RawConnection(port: port, reads: false)
                    try await connection.send("GET /v1/relay/llm/huge HTTP/1.1\r\nHost: sesame\r\nAuthorization: Bearer \(token)\r\n\r\n")
                    stalled.append(connection)
                }
                try await eventually(pollEvery: .milliseconds(250), "the install's slots are all taken") {
                    Self.errorCode(try await Self.call(harness, .get, "/v1/relay/llm/teapot", token: token).body) == "relay_busy"
                }
                // Past the relay's 6 s (and the second's grace to end a write), the slots are free.
                try await eventually(timeout: .seconds(20), "the blocked calls end and give their slots back") {
                    try await Self.call(harness, .get, "/v1/relay/llm/teapot", token: token).status.code == 418
                }
                for connection in stalled { await connection.close() }
            }
        }
    }

    @Test("a body sent a byte at a time ends at the relay's time: 408 relay_request_timeout, and the call's slot is given back")
    func slowBodyEndsAtTheRelaysTime() async throws {
        try await TestUpstream.run { upstream in
            try await DeliveryHarness.run { harness in
                let token = try await harness.app.attest(with: harness.auth).accessToken
                try await Self.setRelay(harness, name: "llm", upstream: upstream, token: token, ["timeoutSeconds": 1, "perInstallPerMinute": 1000])
                let port = try #require(harness.deliveries[0].port)
                let started = ContinuousClock.now
                let answer = try await SlowClient.post(
                    port: port, path: "/v1/relay/llm/echo/x", headers: ["Authorization": "Bearer \(token)"], declaredLength: 100, sent: "{")
                #expect(answer.hasPrefix("HTTP/1.1 408") && answer.contains("relay_request_timeout"), "\(answer)")
                #expect(ContinuousClock.now - started < .seconds(5))
                // Its slot was given back: the install's eight are all free for calls that complete.
                for _ in 0..<9 {
                    #expect(try await Self.call(harness, .get, "/v1/relay/llm/teapot", token: token).status.code == 418)
                }
            }
        }
    }

    @Test("unattested installs count their per-install quota by address: a new token at each exchange does not get a new quota")
    func unattestedQuotaByAddress() async throws {
        try await TestUpstream.run { upstream in
            try await DeliveryHarness.run { harness in
                var policy = try #require(try await harness.manage(.get, "policy", [:])["policy"] as? [String: Any])
                policy["admitUnattested"] = true
                try await harness.manage(.put, "policy", policy)
                let attested = try await harness.app.attest(with: harness.auth).accessToken
                try await Self.setRelay(harness, name: "llm", upstream: upstream, token: attested, ["leastTier": "unattested", "perInstallPerDay": 2])
                var statuses: [Int] = []
                for _ in 0..<3 {
                    let unattested = try #require(try await harness.admitUnattested().json["accessToken"] as? String)
                    statuses.append(try await Self.call(harness, .get, "/v1/relay/llm/teapot", token: unattested).status.code)
                }
                #expect(statuses == [418, 418, 429], "\(statuses)")
            }
        }
    }

    @Test("a relay made under the two-person rule sends the header values proposed, not what the proposal's readers see")
    func approvedRelaySendsTheProposedHeaders() async throws {
        try await TestUpstream.run { upstream in
            try await DeliveryHarness.run { harness in
                let token = try await harness.app.attest(with: harness.auth).accessToken
                let second = try #require(
                    try await harness.manage(
                        .post, "keys/create", ["teamId": DeliveryHarness.teamID, "bundleId": DeliveryHarness.bundleID, "keyName": "ben"],
                        key: DeliveryHarness.operatorToken)["key"] as? String)
                var policy = try #require(try await harness.manage(.get, "policy", [:])["policy"] as? [String: Any])
                policy["requireApproval"] = ["relay"]
                try await harness.manage(.put, "policy", policy)
                let proposed = try await harness.manageReply(.put, "relays/llm", Self.relay(to: upstream))
                #expect(proposed.status == .accepted, "\(proposed.json)")
                let id = try #require((proposed.json["proposal"] as? [String: Any])?["id"] as? String)
                let approved = try await harness.manage(.post, "changes/\(id)/approve", [:], key: second)
                #expect((approved["change"] as? [String: Any])?["state"] as? String == "applied", "\(approved)")
                try await Self.waitUntilServed(harness, name: "llm", token: token)
                let echoed = try await Self.call(harness, .post, "/v1/relay/llm/echo/x", token: token, body: "{}")
                let received = try #require((try JSONSerialization.jsonObject(with: Data(echoed.body.utf8)) as? [String: Any])?["headers"] as? [String: [String]])
                #expect(received["authorization"] == ["Bearer \(Self.secret)"] && received["x-api-key"] == ["key-\(Self.secret)"], "\(received)")
            }
        }
    }

    @Test("a relay asking for single-use tokens: one for this relay, bound to the call, of the caller's install, spent once; any other refused before the upstream")
    func limitedUseProof() async throws {
        try await TestUpstream.run { upstream in
            try await DeliveryHarness.run { harness in
                let token = try await harness.app.attest(with: harness.auth).accessToken
                let other = try await harness.app.attest(with: harness.auth).accessToken
                var policy = try #require(try await harness.manage(.get, "policy", [:])["policy"] as? [String: Any])
                policy["apiAudiences"] = ["https://api.example.com"]
                try await harness.manage(.put, "policy", policy)
                try await Self.setRelay(harness, name: "llm", upstream: upstream, token: token)
                #expect(try await harness.manageReply(.put, "relays/llm", [
                    "upstream": "http://127.0.0.1:\(upstream.port)/base", "methods": ["POST", "PUT"], "paths": ["/echo/*"], "proof": "limitedUseToken",
                ]).status == .ok)
                /// A token from auth for `access`'s install, for `audience`, bound to `binding` (already hashed) when given.
                func apiToken(_ access: String, audience: String = "sesame-relay:llm", binding: String?, limitedUse: Bool = true) async throws -> String {
                    var request: [String: Any] = ["audience": audience, "limitedUse": limitedUse]
                    if let binding { request["binding"] = binding }
                    let reply = try await harness.auth.execute(
                        uri: "/v1/auth/api-token", method: .post, headers: [.authorization: "Bearer \(access)", .contentType: "application/json"],
                        body: ByteBuffer(data: try JSONSerialization.data(withJSONObject: request))
                    ) { try JSONSerialization.jsonObject(with: Data(buffer: $0.body)) as? [String: Any] ?? [:] }
                    return try #require(reply["token"] as? String, "\(reply)")
                }
                /// The binding of a call to the relay `llm`.
                func bound(_ method: String = "POST", path: String = "/echo/buy", query: String? = "item=7", body: String = "order-1") -> String {
                    RelayCallStatement(method: method, relay: "llm", path: path, query: query, body: Data(body.utf8)).binding
                }
                func call(_ proof: String?, body: String = "order-1", as access: String? = nil) async throws -> (status: HTTPResponse.Status, headers: HTTPFields, body: String) {
                    var headers: HTTPFields = [:]
                    if let proof { headers[HTTPField.Name("X-Sesame-Limited-Use-Token")!] = proof }
                    return try await Self.call(harness, .post, "/v1/relay/llm/echo/buy?item=7", token: access ?? token, headers: headers, body: body)
                }
                try await eventually("the relay asks for a proof") { Self.errorCode(try await call(nil).body) == "relay_proof_required" }
                let single = try await apiToken(token, binding: bound())
                let paid = try await call(single)
                #expect(paid.status == .created, "\(paid.body)")
                #expect(!paid.body.contains(single), "the proof reached the upstream")
                let replayed = try await call(single)
                #expect(replayed.status == .forbidden && Self.errorCode(replayed.body) == "relay_proof_invalid" && replayed.body.contains("was already spent"), "\(replayed.body)")
                let notThisCall = "not bound to this call"
                for (proof, body, access, why) in [
                    (try await apiToken(token, binding: bound()), "order-2", token, notThisCall),
                    (try await apiToken(token, binding: Base64.urlEncode(SHA256.hash(data: Data("order-1".utf8)))), "order-1", token, notThisCall),
                    (try await apiToken(token, binding: bound(path: "/echo/sell")), "order-1", token, notThisCall),
                    (try await apiToken(token, binding: bound("PUT")), "order-1", token, notThisCall),
                    (try await apiToken(token, binding: bound(query: nil)), "order-1", token, notThisCall),
                    (try await apiToken(token, binding: bound(query: "item=8")), "order-1", token, notThisCall),
                    (try await apiToken(token, binding: nil), "order-1", token, notThisCall),
                    (try await apiToken(token, audience: "https://api.example.com", binding: bound()), "order-1", token, "another audience"),
                    (try await apiToken(token, audience: "sesame-relay:other", binding: bound()), "order-1", token, "another audience"),
                    (try await apiToken(other, binding: bound()), "order-1", token, "not issued to this install"),
                    (try await apiToken(token, binding: bound(), limitedUse: false), "order-1", token, "not single-use"),
                    (token, "order-1", token, "not a valid API token"),
                ] {
                    let refused = try await call(proof, body: body, as: access)
                    #expect(refused.status == .forbidden && Self.errorCode(refused.body) == "relay_proof_invalid" && refused.body.contains(why), "\(why): \(refused.body)")
                }
            }
        }
    }

    @Test("a relay asking for assertions: one by the install's key over the call passes once; over another body, path, method or query, over the body alone, replayed, by another key, refused")
    func assertionProof() async throws {
        try await TestUpstream.run { upstream in
            try await DeliveryHarness.run { harness in
                let (tokens, key) = try await harness.app.attestKeepingKey(with: harness.auth)
                let other = try await harness.app.attest(with: harness.auth).accessToken
                try await Self.setRelay(harness, name: "llm", upstream: upstream, token: tokens.accessToken)
                #expect(try await harness.manageReply(.put, "relays/llm", [
                    "upstream": "http://127.0.0.1:\(upstream.port)/base", "methods": ["POST", "PUT"], "paths": ["/echo/*"], "proof": "assertion",
                ]).status == .ok)
                /// An assertion by the install's key over `clientData`, at `counter`.
                func assertion(_ clientData: Data, counter: UInt32) throws -> String {
                    Data(try harness.app.attester.assert(
                        key, clientDataHash: Array(SHA256.hash(data: clientData)), appId: DeliveryHarness.appID, counter: counter)).base64EncodedString()
                }
                /// An assertion over a call to the relay `llm`.
                func over(_ body: String, method: String = "POST", path: String = "/echo/buy", query: String? = nil, counter: UInt32) throws -> String {
                    try assertion(RelayCallStatement(method: method, relay: "llm", path: path, query: query, body: Data(body.utf8)).clientData, counter: counter)
                }
                func call(_ proof: String?, body: String = "order-1", as access: String? = nil) async throws -> (status: HTTPResponse.Status, headers: HTTPFields, body: String) {
                    var headers: HTTPFields = [:]
                    if let proof { headers[HTTPField.Name("X-Sesame-Assertion")!] = proof }
                    return try await Self.call(harness, .post, "/v1/relay/llm/echo/buy", token: access ?? tokens.accessToken, headers: headers, body: body)
                }
                try await eventually("the relay asks for an assertion") { Self.errorCode(try await call(nil).body) == "relay_proof_required" }
                let first = try over("order-1", counter: 1)
                let paid = try await call(first)
                #expect(paid.status == .created, "\(paid.body)")
                for (proof, body, access, why) in [
                    (first, "order-1", tokens.accessToken, "replayed"),
                    (try over("order-1", counter: 2), "order-2", tokens.accessToken, "over another body"),
                    (try over("order-1", path: "/echo/sell", counter: 3), "order-1", tokens.accessToken, "over another path"),
                    (try over("order-1", method: "PUT", counter: 4), "order-1", tokens.accessToken, "over another method"),
                    (try over("order-1", query: "", counter: 5), "order-1", tokens.accessToken, "over a query the call has not"),
                    (try assertion(Data("order-1".utf8), counter: 6), "order-1", tokens.accessToken, "over the body alone"),
                    (try over("order-1", counter: 7), "order-1", other, "not by this install's key"),
                ] {
                    let refused = try await call(proof, body: body, as: access)
                    #expect(refused.status == .forbidden && Self.errorCode(refused.body) == "relay_proof_invalid", "\(why): \(refused.body)")
                }
                #expect(try await call(try over("order-3", counter: 8), body: "order-3").status == .created)
            }
        }
    }

    @Test("the least tier, the response size limit, a slow upstream bounded by the relay's time, an unreachable upstream")
    func limits() async throws {
        try await TestUpstream.run { upstream in
            try await DeliveryHarness.run { harness in
                let token = try await harness.app.attest(with: harness.auth).accessToken
                try await Self.setRelay(harness, name: "llm", upstream: upstream, token: token, ["timeoutSeconds": 1, "maxResponseBytes": 1000])
                let started = ContinuousClock.now
                let slow = try await Self.call(harness, .get, "/v1/relay/llm/slow", token: token)
                #expect(slow.status == .gatewayTimeout && Self.errorCode(slow.body) == "relay_upstream_timeout", "\(slow.body)")
                #expect(ContinuousClock.now - started < .seconds(3))
                let large = try await Self.call(harness, .get, "/v1/relay/llm/large", token: token)
                #expect(large.status == .badGateway && Self.errorCode(large.body) == "relay_response_too_large", "\(large.body)")

                // A port nothing listens on.
                let closed = try await harness.manageReply(
                    .put, "relays/gone", ["upstream": "http://127.0.0.1:9/base", "methods": ["GET"], "paths": ["/**"], "headers": ["X-Key": "v"]])
                #expect(closed.status == .ok, "\(closed.json)")
                // Probed with a method it does not allow: refused before any upstream call.
                try await eventually("relay gone served") {
                    Self.errorCode(try await Self.call(harness, .post, "/v1/relay/gone/x", token: token).body) == "relay_method_not_allowed"
                }
                let unreachable = try await Self.call(harness, .get, "/v1/relay/gone/x", token: token)
                #expect(unreachable.status == .badGateway && Self.errorCode(unreachable.body) == "relay_upstream_failed", "\(unreachable.body)")
                #expect(!unreachable.body.contains("127.0.0.1"))

                // An unattested token where the relay wants attested ones.
                var policy = try #require(try await harness.manage(.get, "policy", [:])["policy"] as? [String: Any])
                policy["admitUnattested"] = true
                try await harness.manage(.put, "policy", policy)
                let unattested = try #require(try await harness.admitUnattested().json["accessToken"] as? String)
                try await eventually("the unattested token is refused for its tier, not its standing") {
                    let refused = try await Self.call(harness, .get, "/v1/relay/llm/teapot", token: unattested)
                    return refused.status == .forbidden && Self.errorCode(refused.body) == "tier_insufficient"
                }
            }
        }
    }

    @Test("quotas hold across two replicas: an install's daily quota, then the app's, each 429 with Retry-After")
    func quotasAcrossReplicas() async throws {
        try await TestUpstream.run { upstream in
            try await DeliveryHarness.run { harness in
                let prober = try await harness.app.attest(with: harness.auth).accessToken
                let first = try await harness.app.attest(with: harness.auth).accessToken
                let second = try await harness.app.attest(with: harness.auth).accessToken
                // The prober's calls (one a replica once it serves the relay) count for the app.
                try await Self.setRelay(harness, name: "maps", upstream: upstream, token: prober, ["perInstallPerDay": 5, "perAppPerDay": 9])
                /// Calls alternately on each replica, 2.2 s apart (every replica syncs within each gap).
                func calls(_ token: String, _ count: Int) async throws -> (admitted: Int, refusals: [String]) {
                    var admitted = 0
                    var refusals: [String] = []
                    for index in 0..<count {
                        try await Task.sleep(for: .milliseconds(2200))
                        let reply = try await Self.call(harness, .get, "/v1/relay/maps/teapot", token: token, instance: index % 2)
                        if reply.status.code == 418 { admitted += 1; continue }
                        #expect(reply.status == .tooManyRequests && Self.errorCode(reply.body) == "relay_quota_exceeded", "\(reply.body)")
                        #expect((Int(reply.headers[.retryAfter] ?? "") ?? 0) > 0)
                        refusals.append(reply.body)
                    }
                    return (admitted, refusals)
                }
                let firstCalls = try await calls(first, 6)
                #expect(firstCalls.admitted == 5)
                #expect(firstCalls.refusals.first?.contains("each install") == true, "\(firstCalls.refusals)")
                // 2 (the prober) + 5 of the app's 9: the second install gets 2, then the app's quota refuses.
                let secondCalls = try await calls(second, 3)
                #expect(secondCalls.admitted == 2)
                #expect(secondCalls.refusals.first?.contains("the whole app") == true, "\(secondCalls.refusals)")
            }
        }
    }

    @Test("a streamed answer's first event reaches the caller before the upstream finishes; a revocation or a kill switch mid-stream ends it with a reason; a stalled stream ends at the relay's time")
    func streaming() async throws {
        try await TestUpstream.run { upstream in
            try await DeliveryHarness.run { harness in
                let attested = try await harness.app.attest(with: harness.auth)
                let token = attested.accessToken
                try await Self.setRelay(harness, name: "llm", upstream: upstream, token: token, ["timeoutSeconds": 5])
                let port = try #require(harness.deliveries[0].port)
                func open(_ path: String, as bearer: String? = nil) async throws -> (Int, AsyncThrowingStream<Data, any Error>.AsyncIterator) {
                    let request = HTTPExchange.Request(
                        method: "GET", url: URL(string: "http://127.0.0.1:\(port)/v1/relay/llm/\(path)")!,
                        headers: ["authorization": "Bearer \(bearer ?? token)"])
                    let (head, body) = try await URLSessionTransport().stream(request)
                    return (head.status, body.makeAsyncIterator())
                }
                func readUntil(_ text: String, _ chunks: inout AsyncThrowingStream<Data, any Error>.AsyncIterator) async throws -> String {
                    var received = ""
                    while !received.contains(text), let chunk = try await chunks.next() { received += String(decoding: chunk, as: UTF8.self) }
                    return received
                }

                // The upstream holds its second event until released: the first must arrive before.
                var (status, chunks) = try await open("sse")
                #expect(status == 200)
                #expect(try await readUntil("data: one", &chunks).contains("data: one"))
                upstream.release.yield()
                var rest = ""
                while let chunk = try await chunks.next() { rest += String(decoding: chunk, as: UTF8.self) }
                #expect(rest.contains("data: two") && !rest.contains("sesame-relay-ended"), "\(rest)")

                // Stalled after its first event: ended at the relay's 5 s, with why.
                let started = ContinuousClock.now
                var (_, stalled) = try await open("stall")
                let ended = try await readUntil("sesame-relay-ended", &stalled)
                #expect(ended.contains("relay_upstream_timeout"), "\(ended)")
                #expect(ContinuousClock.now - started < .seconds(8))

                // Revoked mid-stream: ended within the standing check's second, with the reason.
                var (_, revoked) = try await open("stall")
                _ = try await readUntil("data: one", &revoked)
                let keyID = try #require(try TrustTierTests.claims(of: token)["sub"] as? String)
                #expect(try await harness.manageReply(.post, "devices/revoke", ["keyId": keyID, "reason": "stolen"]).status == .ok)
                let reason = try await readUntil("sesame-relay-ended", &revoked)
                #expect(reason.contains("token_revoked"), "\(reason)")

                // The install's version switched off mid-stream: ended with the team's reason.
                let current = try await harness.app.attest(with: harness.auth, appVersion: "2.1.3").accessToken
                var (_, switched) = try await open("stall", as: current)
                _ = try await readUntil("data: one", &switched)
                #expect(try await harness.manageReply(.post, "kill-switch", ["versions": ["2.1.3"], "enabled": false, "reason": "update to 2.1.4"]).status == .ok)
                let switchedOff = try await readUntil("sesame-relay-ended", &switched)
                #expect(switchedOff.contains("version_disabled") && switchedOff.contains("update to 2.1.4"), "\(switchedOff)")
            }
        }
    }
}

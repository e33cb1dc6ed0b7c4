import Crypto
import Foundation

@testable import SesameKit

/// A scripted Sesame behind an `HTTPTransport`: the auth flows and `/v1/config` as the real
/// services answer them, with switches for what a test wants to happen, and a log of what it was sent.
final class ScriptedSesame: HTTPTransport, Sendable {
    struct State {
        var requests: [HTTPExchange.Request] = []
        var challenges: Set<String> = []
        var attestedKeys: [String] = []
        var refreshTokens: [String: String] = [:]  // refresh token → key id
        var accessTokens: Set<String> = []
        var revokedAccess: Set<String> = []
        var issued = 0
        var accessLifetime = 900
        /// The config served, or nil for 404 no_config.
        var config: String? = #"{"api_keys":{"stripe":"sk_live_1"},"features":{"x":true},"limits":{"n":5}}"#
        var revision: Int64 = 1
        var cacheControl = "private, no-cache"
        var refreshAfter: Int?
        var killSwitchReason: String?
        var offline = false
        var status503 = false
        var retryAfter429: Int?
        var zeroKnowledge = false
        var refreshRefusal: String?
        /// Codes the next refreshes are refused with, one each, before the token is looked at (so
        /// it stays unspent): `assertion_invalid` for a lost counter race, `invalid_challenge`.
        var refreshRefusalsOnce: [String] = []
        /// The next refresh is carried out (the token rotated) but its reply is lost on the way.
        var loseNextRefreshReply = false
        /// The refresh token rotated last, with its key and successor: auth's grace window takes it
        /// once more, with the key's assertion, if the successor's reply was lost.
        var previousRefresh: (token: String, keyID: String, successor: String)?
        /// Whether a renewal was inside a background activity, per refresh sent (set by the test).
        var refreshesInsideActivity: [Bool] = []
        /// How long each refresh takes to answer (to let concurrent callers pile up).
        var refreshDelay: Duration = .zero
        /// The next config request is answered at once but the answer arrives this much later (a
        /// replica a kill switch has not reached yet, a slow network).
        var nextConfigAnswerDelay: Duration = .zero
        /// The blob stored as `model.bin`, and what the link announces about it.
        var blob: Data?
        var announcedSHA256: String?
        /// Range requests that fail in transit, by their index among range requests.
        var failingRangeRequests: Set<Int> = []
        var rangeRequests = 0
        /// Links handed out before this one are refused as expired.
        var linksValidFrom = 0
        var linksIssued = 0
        /// Debug tokens Sesame knows; whether devices without App Attest are admitted.
        var debugTokens: Set<String> = []
        var admitUnattested = false
        /// The app's attestation ramp (percent), told to a challenge that names the app; nil for none.
        var attestationRamp: Double?
        /// The app bans devices, as auth answers then: its challenge says an attest needs a
        /// DeviceCheck token, and an attest without one is refused `403 device_check_required`.
        var bansDevices = false
        /// The `reason` of each unattested ask, in order (nil when it sent none).
        var unattestedReasons: [String?] = []
        /// The reasons of attestation failures reported with a valid challenge, in order.
        var failureReports: [String] = []
        /// Paths answered 404, as a Sesame older than them would.
        var unknownPaths: Set<String> = []
        /// Access tokens of the tiers below attested, with their tier.
        var lowerTiers: [String: String] = [:]
        /// The top-level keys opened to the tiers below attested.
        var openKeys: Set<String> = []
        /// Per-user documents by user id, with their versions.
        var userDocuments: [String: (body: Data, version: Int)] = [:]
        /// The relay `llm`'s upstream: its status (it echoes what it got), or Sesame's refusal of the call.
        var relayUpstreamStatus = 200
        var relayRefusal: (status: Int, code: String, retryAfter: Int?)?
    }

    let state = Locked(State())
    /// Tells, for each refresh, whether the app runs it inside a background activity.
    let insideActivity: (@Sendable () -> Bool)?

    init(insideActivity: (@Sendable () -> Bool)? = nil) { self.insideActivity = insideActivity }

    func with<T>(_ body: (inout State) -> T) -> T { state.withLock { body(&$0) } }
    var requestPaths: [String] { with { $0.requests.map(\.url.path) } }
    func count(_ path: String) -> Int { requestPaths.filter { $0 == path }.count }

    func send(_ request: HTTPExchange.Request) async throws -> HTTPExchange.Response {
        let (offline, delay) = with { state -> (Bool, Duration) in
            state.requests.append(request)
            return (state.offline, request.url.path == "/v1/auth/refresh" ? state.refreshDelay : .zero)
        }
        if offline { throw URLError(.notConnectedToInternet) }
        if request.url.path == "/v1/auth/refresh", let insideActivity {
            let inside = insideActivity()
            with { $0.refreshesInsideActivity.append(inside) }
        }
        let dropped = with { state -> Bool in
            guard request.url.path.hasSuffix("/content") else { return false }
            defer { state.rangeRequests += 1 }
            return state.failingRangeRequests.contains(state.rangeRequests)
        }
        if dropped { throw URLError(.networkConnectionLost) }
        if delay > .zero { try await Task.sleep(for: delay) }
        let (response, lateBy) = with { state -> (HTTPExchange.Response, Duration) in
            let lateBy = request.url.path == "/v1/config" ? state.nextConfigAnswerDelay : .zero
            if request.url.path == "/v1/config" { state.nextConfigAnswerDelay = .zero }
            return (respond(to: request, state: &state), lateBy)
        }
        if lateBy > .zero { try await Task.sleep(for: lateBy) }
        let lost = request.url.path == "/v1/auth/refresh" && response.status == 200 && with { state -> Bool in
            defer { state.loseNextRefreshReply = false }
            return state.loseNextRefreshReply
        }
        if lost { throw URLError(.networkConnectionLost) }
        return response
    }

    private func json(_ status: Int, _ object: [String: Any], headers: [String: String] = [:]) -> HTTPExchange.Response {
        var headers = headers
        headers["content-type"] = "application/json"
        return HTTPExchange.Response(status: status, headers: headers, body: try! JSONSerialization.data(withJSONObject: object))
    }

    private func refusal(_ status: Int, _ code: String, _ message: String = "refused", headers: [String: String] = [:]) -> HTTPExchange.Response {
        json(status, ["error": ["code": code, "message": message]], headers: headers)
    }

    private func body(_ request: HTTPExchange.Request) -> [String: Any] {
        (request.body.flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] }) ?? [:]
    }

    private func issue(for keyID: String, state: inout State) -> HTTPExchange.Response {
        state.issued += 1
        let access = "access-\(state.issued)", refresh = "refresh-\(state.issued)"
        state.accessTokens.insert(access)
        state.refreshTokens[refresh] = keyID
        return json(200, ["accessToken": access, "refreshToken": refresh, "expiresIn": state.accessLifetime])
    }

    private func issueLowerTier(_ tier: String, state: inout State) -> HTTPExchange.Response {
        state.issued += 1
        let access = "\(tier)-access-\(state.issued)"
        state.accessTokens.insert(access)
        state.lowerTiers[access] = tier
        return json(200, ["accessToken": access, "expiresIn": state.accessLifetime, "tier": tier])
    }

    private func respond(to request: HTTPExchange.Request, state: inout State) -> HTTPExchange.Response {
        if state.unknownPaths.contains(request.url.path) { return refusal(404, "not_found") }
        switch (request.method, request.url.path) {
        case ("POST", "/v1/auth/challenge"):
            let nonce = Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
            state.challenges.insert(nonce)
            var reply: [String: Any] = ["nonce": nonce, "expiresIn": 300]
            if body(request)["teamId"] as? String == "A1B2C3D4E5" {
                reply["attestationRamp"] = state.attestationRamp
                if state.bansDevices { reply["deviceTokenRequired"] = true }
            }
            return json(200, reply)
        case ("POST", "/v1/auth/attest"):
            let body = body(request)
            guard let nonce = body["nonce"] as? String, state.challenges.remove(nonce) != nil else { return refusal(401, "invalid_challenge") }
            guard let keyID = body["keyId"] as? String, let object = (body["attestationObject"] as? String).flatMap({ Data(base64Encoded: $0) }),
                object == FakeAppAttest.attestation(keyID: keyID, clientDataHash: Data(SHA256.hash(data: Data(base64Encoded: nonce)!)))
            else { return refusal(401, "attestation_invalid") }
            guard !state.attestedKeys.contains(keyID) else { return refusal(409, "key_already_attested") }
            if state.bansDevices, body["deviceToken"] as? String == nil { return refusal(403, "device_check_required") }
            state.attestedKeys.append(keyID)
            return issue(for: keyID, state: &state)
        case ("POST", "/v1/auth/debug"):
            guard let token = body(request)["debugToken"] as? String, state.debugTokens.contains(token) else {
                return refusal(401, "debug_token_invalid")
            }
            return issueLowerTier("debug", state: &state)
        case ("POST", "/v1/auth/unattested"):
            guard state.admitUnattested else { return refusal(403, "unattested_not_admitted") }
            guard let nonce = body(request)["nonce"] as? String, state.challenges.remove(nonce) != nil else { return refusal(401, "invalid_challenge") }
            state.unattestedReasons.append(body(request)["reason"] as? String)
            return issueLowerTier("unattested", state: &state)
        case ("POST", "/v1/auth/attestation-failure"):
            let report = body(request)
            guard let nonce = report["nonce"] as? String, state.challenges.remove(nonce) != nil else { return refusal(401, "invalid_challenge") }
            state.failureReports.append(report["reason"] as? String ?? "")
            return HTTPExchange.Response(status: 204, headers: [:], body: Data())
        case ("POST", "/v1/auth/refresh"):
            let body = body(request)
            if let code = state.refreshRefusal { return refusal(401, code) }
            if !state.refreshRefusalsOnce.isEmpty { return refusal(401, state.refreshRefusalsOnce.removeFirst()) }
            guard let token = body["refreshToken"] as? String else { return refusal(401, "invalid_token") }
            let keyID: String
            var graceFor: String?
            if let current = state.refreshTokens[token] {
                keyID = current
            } else if let previous = state.previousRefresh, previous.token == token {
                // The previous token once more: its successor's reply was lost (auth's grace window).
                keyID = previous.keyID
                graceFor = previous.successor
            } else {
                return refusal(401, "refresh_token_reused")
            }
            guard let clientData = (body["clientData"] as? String).flatMap({ Data(base64Encoded: $0) }),
                let challenge = (try? JSONSerialization.jsonObject(with: clientData) as? [String: String])?["challenge"],
                state.challenges.remove(challenge) != nil,
                (body["assertion"] as? String).flatMap({ Data(base64Encoded: $0) })
                    == FakeAppAttest.assertion(keyID: keyID, clientDataHash: Data(SHA256.hash(data: clientData)))
            else { return refusal(401, "assertion_invalid") }
            // The pair whose reply was lost stops working; the grace is spent.
            if let graceFor { state.refreshTokens[graceFor] = nil }
            state.refreshTokens[token] = nil
            let response = issue(for: keyID, state: &state)
            state.previousRefresh = graceFor == nil ? (token, keyID, "refresh-\(state.issued)") : nil
            return response
        case ("GET", "/v1/blob/model.bin"), ("GET", "/v1/blob/missing.bin"):
            guard state.accessTokens.contains(request.headers["authorization"]?.replacingOccurrences(of: "Bearer ", with: "") ?? "") else {
                return refusal(401, "invalid_token")
            }
            guard request.url.path.hasSuffix("model.bin"), let blob = state.blob else { return refusal(404, "blob_not_found") }
            state.linksIssued += 1
            return json(200, [
                "url": "/v1/blob/model.bin/content?link=\(state.linksIssued)", "expiresIn": 300, "sizeBytes": blob.count,
                "sha256": state.announcedSHA256 ?? SHA256.hash(data: blob).map { String(format: "%02x", $0) }.joined(),
                "contentType": "application/octet-stream",
            ])
        case ("GET", "/v1/blob/model.bin/content"):
            guard let blob = state.blob else { return refusal(404, "blob_not_found") }
            let link = Int(URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == "link" }?.value ?? "") ?? 0
            guard link >= state.linksValidFrom else { return refusal(403, "invalid_link") }
            guard let range = request.headers["range"], range.hasPrefix("bytes=") else { return HTTPExchange.Response(status: 200, body: blob) }
            let bounds = range.dropFirst(6).split(separator: "-").compactMap { Int($0) }
            let (first, last) = (bounds[0], min(bounds[1], blob.count - 1))
            return HTTPExchange.Response(
                status: 206, headers: ["content-range": "bytes \(first)-\(last)/\(blob.count)"], body: blob.subdata(in: first..<(last + 1)))
        case (_, "/v1/user/data"):
            guard state.accessTokens.contains(request.headers["authorization"]?.replacingOccurrences(of: "Bearer ", with: "") ?? "") else {
                return refusal(401, "invalid_token")
            }
            guard let user = request.headers["x-sesame-user-id"] else { return refusal(400, "invalid_request") }
            if request.method == "GET" {
                guard let stored = state.userDocuments[user] else { return refusal(404, "no_user_data") }
                return HTTPExchange.Response(status: 200, headers: ["etag": "\"\(stored.version)\""], body: stored.body)
            }
            let current = state.userDocuments[user]?.version ?? 0
            guard request.headers["if-match"] == "\"\(current)\"" else { return refusal(412, "version_conflict") }
            state.userDocuments[user] = (request.body ?? Data(), current + 1)
            return json(200, ["version": current + 1], headers: ["etag": "\"\(current + 1)\""])
        case (_, let path) where path.hasPrefix("/v1/relay/llm/"):
            let bearer = request.headers["authorization"]?.replacingOccurrences(of: "Bearer ", with: "") ?? ""
            guard state.accessTokens.contains(bearer), !state.revokedAccess.contains(bearer) else { return refusal(401, "invalid_token") }
            if let refused = state.relayRefusal {
                return refusal(refused.status, refused.code, headers: refused.retryAfter.map { ["retry-after": String($0)] } ?? [:])
            }
            // The upstream's answer: what it received, marked as the relay marks it.
            let echo: [String: Any] = [
                "method": request.method, "path": String(path.dropFirst("/v1/relay/llm".count)),
                "body": String(decoding: request.body ?? Data(), as: UTF8.self), "custom": request.headers["x-custom"] ?? "",
                "assertion": request.headers["x-sesame-assertion"] ?? "",
            ]
            return json(state.relayUpstreamStatus, echo, headers: ["x-sesame-upstream": "1"])
        case ("GET", "/v1/config"):
            let bearer = request.headers["authorization"]?.replacingOccurrences(of: "Bearer ", with: "") ?? ""
            if state.revokedAccess.contains(bearer) { return refusal(401, "token_revoked") }
            guard state.accessTokens.contains(bearer) else { return refusal(401, "invalid_token") }
            if let seconds = state.retryAfter429 { return refusal(429, "rate_limited", headers: ["retry-after": String(seconds)]) }
            if state.status503 { return refusal(503, "service_unavailable", headers: ["retry-after": "5"]) }
            if let reason = state.killSwitchReason { return refusal(403, "version_disabled", reason) }
            guard var config = state.config else { return refusal(404, "no_config") }
            let tier = state.lowerTiers[bearer] ?? "attested"
            var withheld: [String] = []
            if tier != "attested", var object = try? JSONSerialization.jsonObject(with: Data(config.utf8)) as? [String: Any] {
                withheld = object.keys.filter { !state.openKeys.contains($0) }.sorted()
                for key in withheld { object[key] = nil }
                config = String(decoding: try! JSONSerialization.data(withJSONObject: object), as: UTF8.self)
            }
            let query = URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.queryItems ?? []
            if state.zeroKnowledge, query.contains(where: { $0.name == "scope" }) { return refusal(400, "scope_unavailable_zero_knowledge") }
            // As delivery's: each tier's view is its own bytes, so its own tag (the attested one as before).
            let etag = tier == "attested" ? "\"\(state.revision)-etag\"" : "\"\(state.revision)-\(tier)-etag\""
            var headers = ["etag": etag, "cache-control": state.cacheControl]
            if let refreshAfter = state.refreshAfter { headers["cache-control"] = "private, max-age=\(refreshAfter)" }
            if request.headers["if-none-match"] == etag { return HTTPExchange.Response(status: 304, headers: headers) }
            var reply: [String: Any] = [
                "config": try! JSONSerialization.jsonObject(with: Data(config.utf8)), "matchedPattern": "*", "revision": state.revision,
                "requestedVersion": query.first { $0.name == "version" }?.value ?? "",
            ]
            if let refreshAfter = state.refreshAfter { reply["refreshAfter"] = refreshAfter }
            reply["tier"] = tier
            if !withheld.isEmpty { reply["withheld"] = withheld }
            return json(200, reply, headers: headers)
        default:
            return refusal(404, "not_found")
        }
    }
}

/// An `AppAttestProvider` whose attestations and assertions `ScriptedSesame` recognises (the
/// cryptography of real ones is the server's concern, tested there against a software attester).
final class FakeAppAttest: AppAttestProvider, Sendable {
    struct State {
        var generated = 0
        var attestCalls: [(keyID: String, clientDataHash: Data)] = []
        var assertions = 0
        var attestFailures: [AppAttestProviderError] = []
        /// Failures of the next assertions and key generations, one each.
        var assertionFailures: [AppAttestProviderError] = []
        var generateKeyFailures: [AppAttestProviderError] = []
        /// The device tokens `DCDevice` makes, one each ask; nil when it fails (or none is left).
        var deviceTokens: [Data?] = []
    }

    let supported: Bool
    let state = Locked(State())

    init(supported: Bool = true) { self.supported = supported }

    var isSupported: Bool { supported }

    func generateKey() async throws -> String {
        guard supported else { throw AppAttestProviderError.unsupported }
        return try state.withLock { state in
            if !state.generateKeyFailures.isEmpty { throw state.generateKeyFailures.removeFirst() }
            state.generated += 1
            return Data(SHA256.hash(data: Data("key-\(state.generated)".utf8))).base64EncodedString()
        }
    }

    func attestKey(_ keyID: String, clientDataHash: Data) async throws -> Data {
        try state.withLock { state in
            state.attestCalls.append((keyID, clientDataHash))
            if !state.attestFailures.isEmpty { throw state.attestFailures.removeFirst() }
        }
        return Self.attestation(keyID: keyID, clientDataHash: clientDataHash)
    }

    func generateAssertion(_ keyID: String, clientDataHash: Data) async throws -> Data {
        try state.withLock { state in
            if !state.assertionFailures.isEmpty { throw state.assertionFailures.removeFirst() }
            state.assertions += 1
        }
        return Self.assertion(keyID: keyID, clientDataHash: clientDataHash)
    }

    func deviceCheckToken() async -> Data? {
        state.withLock { $0.deviceTokens.isEmpty ? nil : $0.deviceTokens.removeFirst() }
    }

    static func attestation(keyID: String, clientDataHash: Data) -> Data { Data("attest:\(keyID):".utf8) + clientDataHash }
    static func assertion(keyID: String, clientDataHash: Data) -> Data { Data("assert:\(keyID):".utf8) + clientDataHash }
}

import AppAttestTesting
import Crypto
import Foundation

/// An iPhone running the app, simulated: App Attest through the software attester (whose root the
/// local suite trusts in development), every call through the gateway as a real app makes it.
final class Device: @unchecked Sendable {
    let attester: SoftwareAttester
    let appID: (team: String, bundle: String)
    let gateway: HTTPClient
    private(set) var key: SoftwareAttester.DeviceKey?
    private(set) var accessToken = ""
    private(set) var refreshToken = ""
    private var counter: UInt32 = 0

    init(attester: SoftwareAttester, team: String, bundle: String, gateway: HTTPClient) {
        self.attester = attester
        self.appID = (team, bundle)
        self.gateway = gateway
    }

    private var appIdentifier: String { "\(appID.team).\(appID.bundle)" }

    /// A fresh challenge nonce (base64).
    func challenge() async throws -> String {
        let reply = try await gateway.send("POST", "/v1/auth/challenge")
        guard reply.status == 200, let nonce = reply.json["nonce"] as? String else {
            throw WalkFailure("challenge: \(reply.status) \(String(decoding: reply.body, as: UTF8.self))")
        }
        return nonce
    }

    /// Generates a new key, attests it and keeps the tokens.
    func attest(appVersion: String) async throws {
        let nonce = try await challenge()
        guard let nonceBytes = Data(base64Encoded: nonce) else { throw WalkFailure("nonce is not base64") }
        let key = attester.generateKey()
        let attestation = try attester.attest(key, clientDataHash: Array(SHA256.hash(data: nonceBytes)), appId: appIdentifier)
        let reply = try await gateway.send(
            "POST", "/v1/auth/attest",
            json: [
                "attestationObject": Data(attestation).base64EncodedString(), "keyId": Data(key.keyId).base64EncodedString(),
                "nonce": nonce, "teamId": appID.team, "bundleId": appID.bundle, "appVersion": appVersion,
            ])
        try keepTokens(reply, step: "attest")
        self.key = key
        counter = 0
    }

    /// A refresh body signed by the attested key over a fresh challenge (`generateAssertion`).
    func assertedRefreshBody() async throws -> [String: Any] {
        guard let key else { throw WalkFailure("no attested key") }
        let clientData = try JSONSerialization.data(withJSONObject: ["challenge": try await challenge()])
        counter += 1
        let assertion = try attester.assert(
            key, clientDataHash: Array(SHA256.hash(data: clientData)), appId: appIdentifier, counter: counter)
        return ["refreshToken": refreshToken, "assertion": Data(assertion).base64EncodedString(), "clientData": clientData.base64EncodedString()]
    }

    /// `POST /v1/auth/refresh` with `body`; keeps the new tokens when it succeeds.
    @discardableResult
    func refresh(_ body: [String: Any]) async throws -> HTTPReply {
        let reply = try await gateway.send("POST", "/v1/auth/refresh", json: body)
        if reply.status == 200 { try keepTokens(reply, step: "refresh") }
        return reply
    }

    /// An authenticated call.
    func call(_ method: String, _ path: String, headers: [String: String] = [:], body: Data? = nil, on client: HTTPClient? = nil)
        async throws -> HTTPReply
    {
        var headers = headers
        headers["Authorization"] = "Bearer \(accessToken)"
        if body != nil { headers["Content-Type"] = "application/json" }
        return try await (client ?? gateway).send(method, path, headers: headers, body: body)
    }

    /// `GET /v1/config`.
    func config(version: String, scope: String? = nil, ifNoneMatch: String? = nil, on client: HTTPClient? = nil) async throws -> HTTPReply {
        var path = "/v1/config?version=\(version)"
        if let scope { path += "&scope=\(scope)" }
        return try await call("GET", path, headers: ifNoneMatch.map { ["If-None-Match": $0] } ?? [:], on: client)
    }

    private func keepTokens(_ reply: HTTPReply, step: String) throws {
        guard reply.status == 200, let access = reply.json["accessToken"] as? String, let refresh = reply.json["refreshToken"] as? String
        else { throw WalkFailure("\(step): \(reply.status) \(String(decoding: reply.body, as: UTF8.self))") }
        accessToken = access
        refreshToken = refresh
    }
}

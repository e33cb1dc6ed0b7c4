import AppAttest
import AppAttestTesting
import Crypto
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOFoundationEssentialsCompat

/// An app on a software "device": asks auth for a challenge, attests a new key with the software
/// attester (which auth trusts in development through an extra root), and returns the tokens.
public struct SoftwareApp: Sendable {
    public let attester: SoftwareAttester
    public let teamID: String
    public let bundleID: String

    public init(attester: SoftwareAttester, teamID: String, bundleID: String) {
        self.attester = attester
        self.teamID = teamID
        self.bundleID = bundleID
    }

    /// What auth answered.
    public struct Tokens: Sendable {
        public let accessToken: String
        public let refreshToken: String
    }

    public struct Refused: Error, CustomStringConvertible {
        public let description: String
    }

    /// Attests a new key with `auth` (a client of a live auth service) for an app at `appVersion`,
    /// in App Attest's `environment` (development, as an Xcode build, unless told).
    public func attest(
        with auth: any TestClientProtocol, appVersion: String? = nil, environment: AppAttestEnvironment = .development
    ) async throws -> Tokens {
        try await attestKeepingKey(with: auth, appVersion: appVersion, environment: environment).tokens
    }

    /// `attest`, returning the device's key too, for assertions by it afterwards.
    public func attestKeepingKey(
        with auth: any TestClientProtocol, appVersion: String? = nil, environment: AppAttestEnvironment = .development
    ) async throws -> (tokens: Tokens, key: SoftwareAttester.DeviceKey) {
        let challenge = try await auth.execute(uri: "/v1/auth/challenge", method: .post) { Data(buffer: $0.body) }
        guard let nonceText = (try JSONSerialization.jsonObject(with: challenge) as? [String: Any])?["nonce"] as? String,
            let nonce = Data(base64Encoded: nonceText)
        else { throw Refused(description: "no nonce in \(String(decoding: challenge, as: UTF8.self))") }
        let key = attester.generateKey()
        let attestation = try attester.attest(
            key, clientDataHash: Array(SHA256.hash(data: nonce)), appId: "\(teamID).\(bundleID)", environment: environment)
        var body: [String: Any] = [
            "attestationObject": Data(attestation).base64EncodedString(), "keyId": Data(key.keyId).base64EncodedString(),
            "nonce": nonceText, "teamId": teamID, "bundleId": bundleID,
        ]
        body["appVersion"] = appVersion
        let reply = try await auth.execute(
            uri: "/v1/auth/attest", method: .post, headers: [.contentType: "application/json"],
            body: ByteBuffer(data: try JSONSerialization.data(withJSONObject: body))
        ) { Data(buffer: $0.body) }
        guard let tokens = try JSONSerialization.jsonObject(with: reply) as? [String: Any], let access = tokens["accessToken"] as? String,
            let refresh = tokens["refreshToken"] as? String
        else { throw Refused(description: "attest refused: \(String(decoding: reply, as: UTF8.self))") }
        return (Tokens(accessToken: access, refreshToken: refresh), key)
    }
}

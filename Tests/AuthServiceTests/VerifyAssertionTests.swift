import AppAttestTesting
import Crypto
import Foundation
import HTTPTypes
import PostgresNIO
import SesameDomain
import SesameTestSupport
import Testing

/// Assertions for sensitive actions: the app signs the action's data with its App Attest key and
/// the app's backend asks Sesame to check it, with a backend key.
@Suite("Auth: assertions checked for the app's backend", .timeLimit(.minutes(2)))
struct VerifyAssertionTests {
    static let action = Data(#"{"action":"purchase","sku":"gold","quantity":1}"#.utf8)

    /// The body a backend sends: what the app sent with its action.
    static func body(
        _ harness: AuthHarness, key: SoftwareAttester.DeviceKey, counter: UInt32, clientData: Data = action, signedData: Data? = nil,
        appID: String = AuthHarness.appID, signingKey: P256.Signing.PrivateKey? = nil
    ) throws -> [String: Any] {
        let assertion = try harness.attester.assert(
            key, clientDataHash: Array(SHA256.hash(data: signedData ?? clientData)), appId: appID, counter: counter, signingKey: signingKey)
        return [
            "keyId": Data(key.keyId).base64EncodedString(), "clientData": clientData.base64EncodedString(),
            "assertion": Data(assertion).base64EncodedString(),
        ]
    }

    @Test("a valid assertion answers the app, key, environment and tier and advances the counter; the same assertion again is refused")
    func validThenReplayed() async throws {
        try await AuthHarness.run { harness in
            let backendKey = try await harness.backendKey()
            let (key, _) = try await harness.attestNewKey()
            let body = try Self.body(harness, key: key, counter: 3)
            let first = try await harness.post("/v1/verify/assertion", body, bearer: backendKey)
            #expect(first.status == .ok, "\(first.json)")
            #expect(first["app"] == AuthHarness.appID && first["keyId"] == Base64.urlEncode(key.keyId))
            #expect(first["tier"] == "attested" && first["environment"] == "development" && first.json["counter"] as? Int == 3)
            let replayed = try await harness.post("/v1/verify/assertion", body, bearer: backendKey)
            #expect(replayed.status == .unauthorized && replayed.errorCode == "assertion_invalid", "\(replayed.json)")
            // The next action, with the next counter, passes.
            #expect(try await harness.post("/v1/verify/assertion", try Self.body(harness, key: key, counter: 4), bearer: backendKey).status == .ok)
        }
    }

    @Test("each step of Apple's assertion validation refuses: signature by another key, data that is not what was signed, another app's RP id, an old counter")
    func eachStepRefuses() async throws {
        try await AuthHarness.run { harness in
            let backendKey = try await harness.backendKey()
            let (key, _) = try await harness.attestNewKey()
            #expect(try await harness.post("/v1/verify/assertion", try Self.body(harness, key: key, counter: 10), bearer: backendKey).status == .ok)
            let cases: [(String, [String: Any])] = [
                ("signature", try Self.body(harness, key: key, counter: 11, signingKey: P256.Signing.PrivateKey())),
                ("client data", try Self.body(harness, key: key, counter: 12, signedData: Data(#"{"action":"purchase","quantity":100}"#.utf8))),
                ("rp id", try Self.body(harness, key: key, counter: 13, appID: "OTHERTEAM1.com.example.other")),
                ("old counter", try Self.body(harness, key: key, counter: 9)),
                ("same counter", try Self.body(harness, key: key, counter: 10)),
            ]
            for (name, body) in cases {
                let reply = try await harness.post("/v1/verify/assertion", body, bearer: backendKey)
                #expect(reply.status == .unauthorized && reply.errorCode == "assertion_invalid", "\(name): \(reply.status) \(reply.json)")
            }
            // None of them advanced the counter.
            #expect(try await harness.post("/v1/verify/assertion", try Self.body(harness, key: key, counter: 11), bearer: backendKey).status == .ok)
        }
    }

    @Test("refused: no or a wrong backend key, an unknown key id, a revoked device, malformed fields")
    func refusals() async throws {
        try await AuthHarness.run { harness in
            let backendKey = try await harness.backendKey()
            let (key, _) = try await harness.attestNewKey()
            let body = try Self.body(harness, key: key, counter: 1)
            #expect(try await harness.post("/v1/verify/assertion", body, bearer: nil).errorCode == "invalid_backend_key")
            #expect(try await harness.post("/v1/verify/assertion", body, bearer: "bk_prod_" + String(repeating: "B", count: 43)).errorCode == "invalid_backend_key")

            let stranger = harness.attester.generateKey()
            let unknown = try await harness.post("/v1/verify/assertion", try Self.body(harness, key: stranger, counter: 1), bearer: backendKey)
            #expect(unknown.status == .notFound && unknown.errorCode == "key_not_found")

            var malformed = body
            malformed["keyId"] = "not base64!"
            #expect(try await harness.post("/v1/verify/assertion", malformed, bearer: backendKey).status == .badRequest)
            malformed = body
            malformed["assertion"] = "%%%"
            #expect(try await harness.post("/v1/verify/assertion", malformed, bearer: backendKey).status == .badRequest)

            try await harness.database.query("UPDATE attested_keys SET revoked_at = now() WHERE key_id = \(Data(key.keyId))")
            let revoked = try await harness.post("/v1/verify/assertion", body, bearer: backendKey)
            #expect(revoked.status == .forbidden && revoked.errorCode == "device_revoked")
        }
    }

    @Test("delivery's gate holds for assertions: a kill switch on the version the key last used, an emergency revocation made after it attested")
    func gate() async throws {
        try await AuthHarness.run { harness in
            let backendKey = try await harness.backendKey()
            let (key, _) = try await harness.attestNewKey(appVersion: "2.1.3")
            #expect(try await harness.post("/v1/verify/assertion", try Self.body(harness, key: key, counter: 1), bearer: backendKey).status == .ok)

            try await harness.database.query(
                "INSERT INTO kill_switches (app_id, version, reason) VALUES (\(AuthHarness.appID), '2.1.*', 'Update from the App Store.')")
            let switchedOff = try await harness.post("/v1/verify/assertion", try Self.body(harness, key: key, counter: 2), bearer: backendKey)
            #expect(switchedOff.status == .forbidden && switchedOff.errorCode == "version_disabled", "\(switchedOff.json)")
            try await harness.database.query("DELETE FROM kill_switches")

            try await harness.database.query(
                "INSERT INTO revocations (app_id, version_pattern, issued_before) VALUES (\(AuthHarness.appID), '2.*', now())")
            let revoked = try await harness.post("/v1/verify/assertion", try Self.body(harness, key: key, counter: 3), bearer: backendKey)
            #expect(revoked.status == .forbidden && revoked.errorCode == "token_revoked", "\(revoked.json)")
            // A key attested after the revocation is not covered by it.
            let (fresh, _) = try await harness.attestNewKey(appVersion: "2.1.4")
            #expect(try await harness.post("/v1/verify/assertion", try Self.body(harness, key: fresh, counter: 1), bearer: backendKey).status == .ok)
        }
    }

    @Test("a backend key of another app cannot check this app's keys: not found, as for a key that does not exist")
    func otherApp() async throws {
        try await AuthHarness.run { harness in
            let (key, _) = try await harness.attestNewKey()
            try await harness.database.query(
                "INSERT INTO apps (app_id, team_id, bundle_id, storage_id) VALUES ('OTHERTEAM1.com.example.other', 'OTHERTEAM1', 'com.example.other', '\\x00'::bytea)")
            let otherKey = try await harness.backendKey(appID: "OTHERTEAM1.com.example.other")
            let reply = try await harness.post("/v1/verify/assertion", try Self.body(harness, key: key, counter: 1), bearer: otherKey)
            #expect(reply.status == .notFound && reply.errorCode == "key_not_found")
        }
    }

    @Test("eight backends checking one assertion at once over eight connections: exactly one accepts it")
    func parallelChecks() async throws {
        try await AuthHarness.run(connections: .many) { harness in
            let backendKey = try await harness.backendKey()
            let (key, _) = try await harness.attestNewKey()
            let body = try JSONSerialization.data(withJSONObject: try Self.body(harness, key: key, counter: 7))
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for _ in 0..<8 { group.addTask { try await harness.post("/v1/verify/assertion", body: body, bearer: backendKey).status } }
                return try await group.reduce(into: [HTTPResponse.Status]()) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == .ok }.count == 1, "\(statuses)")
            #expect(statuses.filter { $0 == .unauthorized }.count == 7, "\(statuses)")
        }
    }
}

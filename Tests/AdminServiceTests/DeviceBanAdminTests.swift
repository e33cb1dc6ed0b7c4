import AppleFake
import Crypto
import Foundation
import HTTPTypes
import PostgresNIO
import SesameDomain
import SesameEncryption
import SesameStorage
import SesameTestSupport
import Synchronization
import Testing

@testable import AdminService

/// Bans that survive a reinstall, admin's side: the policy's ban bit (needing the DeviceCheck key, the
/// same across a team's apps), `devices/revoke` with `ban` setting the bit with Apple (a fake written
/// from its documentation) before anything is recorded, and `devices/unban` clearing it.
@Suite("Admin: device bans", .timeLimit(.minutes(2)))
struct DeviceBanAdminTests {
    static let appleKeyID = "BANKEY1234"

    /// Runs `body` with admin pointed at a running fake Apple that knows `appleKey`.
    static func withApple(_ body: @Sendable (AdminHarness, FakeDeviceCheck, P256.Signing.PrivateKey) async throws -> Void) async throws {
        let apple = FakeDeviceCheck()
        let appleKey = P256.Signing.PrivateKey()
        apple.register(keyID: appleKeyID, teamID: AdminHarness.teamID, publicKey: appleKey.publicKey)
        try await apple.run { appleURL in
            try await AdminHarness.run(appleDeviceCheckURL: appleURL) { harness in
                try await body(harness, apple, appleKey)
            }
        }
    }

    /// Sets the app's DeviceCheck key through the API.
    static func setKey(_ harness: AdminHarness, _ credential: String, _ appleKey: P256.Signing.PrivateKey) async throws {
        let set = try await harness.call(
            .put, "/v1/admin/apple/credentials", credential: credential, json: ["keyId": appleKeyID, "privateKey": appleKey.pemRepresentation])
        #expect(set.status == .ok, "\(set.json)")
    }

    /// An attested install of the app, as auth records one: with its DeviceCheck token sealed when given.
    static func attestedDevice(_ harness: AdminHarness, deviceToken: String?) async throws -> String {
        let keyID = (0..<32).map { _ in UInt8.random(in: 0...255) }
        let listed = Base64.urlEncode(keyID)
        let encryption = EnvelopeEncryption(keyring: try MasterKeyring(current: AdminHarness.masterKey))
        let sealed = try deviceToken.map {
            Data(try encryption.seal(Array($0.utf8), context: SealingContext.deviceToken(appID: AdminHarness.appID, keyID: listed)))
        }
        try await harness.database.query(
            """
            INSERT INTO attested_keys (key_id, app_id, public_key, receipt, counter, environment, device_token_ciphertext)
            VALUES (\(Data(keyID)), \(AdminHarness.appID), '\\x00'::bytea, '\\x00'::bytea, 0, 'production', \(sealed))
            """)
        return listed
    }

    @Test("the ban bit needs the DeviceCheck key, is 0 or 1, and is the same across a team's apps")
    func banBitPolicy() async throws {
        try await Self.withApple { harness, _, appleKey in
            let credential = try await harness.createKey()
            let early = try await harness.call(.put, "/v1/admin/policy", credential: credential, json: ["deviceBanBit": 1])
            #expect(early.status == .badRequest && early.errorMessage?.contains("DeviceCheck key") == true, "\(early.json)")
            try await Self.setKey(harness, credential, appleKey)
            #expect(try await harness.call(.put, "/v1/admin/policy", credential: credential, json: ["deviceBanBit": 2]).status == .badRequest)
            let set = try await harness.call(.put, "/v1/admin/policy", credential: credential, json: ["deviceBanBit": 1])
            #expect(set.status == .ok && (set["changed"] as? [String]) == ["deviceBanBit"], "\(set.json)")

            let sibling = try await harness.createKey(bundleID: "com.example.sibling")
            try await Self.setKey(harness, sibling, appleKey)
            let other = try await harness.call(.put, "/v1/admin/policy", credential: sibling, json: ["deviceBanBit": 0])
            #expect(other.status == .badRequest && other.errorMessage?.contains(AdminHarness.appID) == true, "\(other.json)")
            #expect(try await harness.call(.put, "/v1/admin/policy", credential: sibling, json: ["deviceBanBit": 1]).status == .ok)
            let shown = try await harness.call(.get, "/v1/admin/policy", credential: sibling)
            #expect((shown["policy"] as? [String: Any])?["deviceBanBit"] as? Int == 1, "\(shown.json)")
        }
    }

    @Test("the policy's maxRiskMetric is 1 to 10000 or null; attestationRamp 0 to 100, below 100 only with admitUnattested; a change named twice in requireApproval is refused (the fuzz sent one)")
    func riskAndApprovalFields() async throws {
        try await AdminHarness.run { harness in
            let credential = try await harness.createKey()
            let badPolicies: [[String: Any]] = [
                ["maxRiskMetric": 0], ["maxRiskMetric": 10_001], ["requireApproval": ["policy", "schema", "policy"]],
                ["attestationRamp": 50], ["attestationRamp": 101, "admitUnattested": true], ["attestationRamp": -1, "admitUnattested": true],
            ]
            for bad in badPolicies {
                let refused = try await harness.call(.put, "/v1/admin/policy", credential: credential, json: bad)
                #expect(refused.status == .badRequest, "\(bad): \(refused.json)")
            }
            let set = try await harness.call(.put, "/v1/admin/policy", credential: credential, json: ["maxRiskMetric": 10])
            #expect(set.status == .ok && (set["changed"] as? [String]) == ["maxRiskMetric"], "\(set.json)")
            let ramp = try await harness.call(
                .put, "/v1/admin/policy", credential: credential, json: ["maxRiskMetric": 10, "admitUnattested": true, "attestationRamp": 1.5])
            #expect(ramp.status == .ok && (ramp["changed"] as? [String]) == ["admitUnattested", "attestationRamp"], "\(ramp.json)")
        }
    }

    @Test("revoke with ban sets the bit with Apple, then revokes, records and audits; unban clears it; Apple down changes nothing")
    func banAndUnban() async throws {
        try await Self.withApple { harness, apple, appleKey in
            let credential = try await harness.createKey()
            let device = try await Self.attestedDevice(harness, deviceToken: apple.deviceToken(for: "iphone-x"))
            let refusedWithoutBit = try await harness.call(
                .post, "/v1/admin/devices/revoke", credential: credential, json: ["keyId": device, "reason": "farm", "ban": true])
            #expect(refusedWithoutBit.status == .conflict && refusedWithoutBit.errorCode == "ban_unavailable", "\(refusedWithoutBit.json)")
            try await Self.setKey(harness, credential, appleKey)
            #expect(try await harness.call(.put, "/v1/admin/policy", credential: credential, json: ["deviceBanBit": 1]).status == .ok)

            // Apple down: nothing is changed, and the same request can be sent again.
            apple.forcedStatus.withLock { $0 = .serviceUnavailable }
            let down = try await harness.call(
                .post, "/v1/admin/devices/revoke", credential: credential, json: ["keyId": device, "reason": "farm", "ban": true])
            #expect(down.status == .badGateway && down.errorCode == "apple_unavailable", "\(down.json)")
            apple.forcedStatus.withLock { $0 = nil }
            var listed = try #require((try await harness.call(.get, "/v1/admin/devices", credential: credential)["devices"] as? [[String: Any]])?.first)
            #expect(listed["revokedAt"] == nil && listed["bannedAt"] == nil && listed["deviceCheck"] as? Bool == true, "\(listed)")

            apple.setBits(of: "iphone-x", bit0: true, bit1: false)
            let banned = try await harness.call(
                .post, "/v1/admin/devices/revoke", credential: credential, json: ["keyId": device, "reason": "farm", "ban": true])
            #expect(banned.status == .ok && banned["banned"] as? Bool == true, "\(banned.json)")
            // Only the ban bit moved: bit 0 is the team's other flag.
            #expect(apple.bits(of: "iphone-x").map { [$0.bit0, $0.bit1] } == [true, true])
            listed = try #require((try await harness.call(.get, "/v1/admin/devices", credential: credential)["devices"] as? [[String: Any]])?.first)
            #expect(listed["revokedAt"] != nil && listed["bannedAt"] != nil, "\(listed)")
            let audit = String(decoding: try await harness.call(.get, "/v1/admin/audit", credential: credential).body, as: UTF8.self)
            #expect(audit.contains("device.ban") && audit.contains("device.revoke"))

            // An install that sent no token cannot be banned, only revoked.
            let tokenless = try await Self.attestedDevice(harness, deviceToken: nil)
            let noToken = try await harness.call(
                .post, "/v1/admin/devices/revoke", credential: credential, json: ["keyId": tokenless, "reason": "farm", "ban": true])
            #expect(noToken.status == .conflict && noToken.errorMessage?.contains("no DeviceCheck token") == true, "\(noToken.json)")

            let lifted = try await harness.call(.post, "/v1/admin/devices/unban", credential: credential, json: ["keyId": device, "reason": "appeal"])
            #expect(lifted.status == .ok, "\(lifted.json)")
            #expect(apple.bits(of: "iphone-x").map { [$0.bit0, $0.bit1] } == [true, false])
            let again = try await harness.call(.post, "/v1/admin/devices/unban", credential: credential, json: ["keyId": device, "reason": "appeal"])
            #expect(again.status == .notFound && again.errorCode == "device_not_banned", "\(again.json)")
            let auditAfter = String(decoding: try await harness.call(.get, "/v1/admin/audit", credential: credential).body, as: UTF8.self)
            #expect(auditAfter.contains("device.unban"))
        }
    }
}

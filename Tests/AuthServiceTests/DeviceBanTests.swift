import AppAttestTesting
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

/// Bans that survive a reinstall, auth's side: with the policy's `deviceBanBit`, an attest carries the
/// device's DeviceCheck token, Apple (a fake written from its documentation) is asked for the device's
/// bits, and a device whose bit is set is refused whatever new key it made.
@Suite("Device bans at attest", .timeLimit(.minutes(2)))
struct DeviceBanTests {
    static let appleKeyID = "DCKEY12345"

    /// Runs `body` with auth pointed at a running fake Apple that knows the app's DeviceCheck key,
    /// stored as admin stores it (sealed under the master key, bound to the app).
    static func withApple(
        policy: AppPolicy, receipts: SoftwareReceiptAuthority? = nil, _ body: @Sendable (AuthHarness, FakeDeviceCheck) async throws -> Void
    ) async throws {
        let apple = FakeDeviceCheck(receipts: receipts)
        let key = P256.Signing.PrivateKey()
        apple.register(keyID: appleKeyID, teamID: AuthHarness.teamID, publicKey: key.publicKey)
        try await apple.run { appleURL in
            try await AuthHarness.run(policy: policy, appleURL: appleURL, receipts: receipts) { harness in
                let encryption = EnvelopeEncryption(keyring: try MasterKeyring(current: AuthHarness.masterKey))
                let sealed = Data(try encryption.seal(Array(key.pemRepresentation.utf8), context: SealingContext.appleCredentials(appID: AuthHarness.appID)))
                try await harness.database.query(
                    """
                    INSERT INTO apple_credentials (app_id, key_id, private_key_ciphertext, set_by)
                    VALUES (\(AuthHarness.appID), \(appleKeyID), \(sealed), 'test')
                    """)
                try await body(harness, apple)
            }
        }
    }

    static let banning = AppPolicy(refreshRequiresAssertion: false, deviceBanBit: 1)

    @Test("a device whose ban bit is set is refused with every new key; its other bit, or another device, is not; the token is kept sealed")
    func bannedDeviceRefused() async throws {
        try await Self.withApple(policy: Self.banning) { harness, apple in
            let (key, clear) = try await harness.attestNewKey(deviceToken: apple.deviceToken(for: "iphone-a"))
            #expect(clear.status == .ok, "\(clear.json)")
            // Kept with the key, sealed to it: the token an admin's ban will use.
            let rows = try await harness.database.query(
                "SELECT device_token_ciphertext FROM attested_keys WHERE key_id = \(Data(key.keyId))")
            var sealed: Data?
            for try await stored in rows.decode(Data?.self) { sealed = stored }
            let encryption = EnvelopeEncryption(keyring: try MasterKeyring(current: AuthHarness.masterKey))
            let opened = try encryption.open(
                try #require(sealed), context: SealingContext.deviceToken(appID: AuthHarness.appID, keyID: Base64.urlEncode(key.keyId)))
            #expect(Data(base64Encoded: String(decoding: opened, as: UTF8.self)) != nil)

            // The other bit means something else to the team: not a ban.
            apple.setBits(of: "iphone-a", bit0: true, bit1: false)
            #expect(try await harness.attestNewKey(deviceToken: apple.deviceToken(for: "iphone-a")).1.status == .ok)

            apple.setBits(of: "iphone-a", bit0: false, bit1: true)
            for _ in 0..<2 {
                // A reinstall makes a new key and a new token: the device is the same to Apple.
                let refused = try await harness.attestNewKey(deviceToken: apple.deviceToken(for: "iphone-a")).1
                #expect(refused.status == .forbidden)
                #expect(refused.errorCode == "device_banned", "\(refused.json)")
            }
            #expect(try await harness.attestNewKey(deviceToken: apple.deviceToken(for: "iphone-b")).1.status == .ok)
            #expect(apple.calls.withLock { $0.allSatisfy { $0 == "v1/query_two_bits" } })
        }
    }

    @Test("where the app bans, an attest without a token is refused (device_check_required), and one Apple does not know is refused (device_token_invalid)")
    func tokenRequired() async throws {
        try await Self.withApple(policy: Self.banning) { harness, apple in
            let missing = try await harness.attestNewKey().1
            #expect(missing.status == .forbidden)
            #expect(missing.errorCode == "device_check_required", "\(missing.json)")
            let forged = try await harness.attestNewKey(deviceToken: Data("not a device".utf8).base64EncodedString()).1
            #expect(forged.status == .unauthorized)
            #expect(forged.errorCode == "device_token_invalid", "\(forged.json)")
            let malformed = try await harness.attestNewKey(deviceToken: "%%%").1
            #expect(malformed.status == .badRequest, "\(malformed.json)")
            let huge = try await harness.attestNewKey(deviceToken: String(repeating: "A", count: 8196)).1
            #expect(huge.status == .badRequest, "\(huge.json)")
            #expect(apple.calls.withLock { $0.count } == 1, "only the forged token reaches Apple")
        }
    }

    @Test("Apple down, rate-limiting or refusing the key admits the install with its verdict owed; asked later, a banned device's keys are revoked, a clear one's kept")
    func appleFailuresAdmit() async throws {
        try await Self.withApple(policy: Self.banning) { harness, apple in
            apple.setBits(of: "iphone-c", bit0: false, bit1: true)
            var banned: [Data] = []
            for status in [HTTPResponse.Status.serviceUnavailable, .tooManyRequests, .unauthorized] {
                apple.forcedStatus.withLock { $0 = status }
                let (key, admitted) = try await harness.attestNewKey(deviceToken: apple.deviceToken(for: "iphone-c"))
                #expect(admitted.status == .ok, "\(status): \(admitted.json)")
                banned.append(Data(key.keyId))
            }
            let (clearKey, clear) = try await harness.attestNewKey(deviceToken: apple.deviceToken(for: "iphone-e"))
            #expect(clear.status == .ok)
            apple.forcedStatus.withLock { $0 = nil }
            #expect(try await harness.attestNewKey(deviceToken: apple.deviceToken(for: "iphone-c")).1.errorCode == "device_banned")

            // Owed, not forgotten: due a minute after the attest; made due now, auth's round asks Apple.
            let owed = try await harness.database.query("SELECT count(*) FROM attested_keys WHERE device_check_due_at IS NOT NULL")
            for try await count in owed.decode(Int.self) { #expect(count == 4) }
            try await harness.database.query("UPDATE attested_keys SET device_check_due_at = now() WHERE device_check_due_at IS NOT NULL")
            try await eventually("the owed checks are asked") {
                let rows = try await harness.database.query("SELECT count(*) FROM attested_keys WHERE device_check_due_at IS NOT NULL")
                for try await count in rows.decode(Int.self) { return count == 0 }
                return false
            }
            let revoked = try await harness.database.query("SELECT key_id FROM attested_keys WHERE revoked_at IS NOT NULL ORDER BY key_id")
            var revokedKeys: [Data] = []
            for try await key in revoked.decode(Data.self) { revokedKeys.append(key) }
            #expect(revokedKeys == banned.sorted { $0.lexicographicallyPrecedes($1) } && !revokedKeys.contains(Data(clearKey.keyId)))
            let audited = try await harness.database.query("SELECT count(*) FROM audit_log WHERE action = 'device.ban_revoke'")
            for try await count in audited.decode(Int.self) { #expect(count == 3) }

            let (_, body) = try await harness.get("/metrics")
            let metrics = String(decoding: body, as: UTF8.self)
            for result in ["unreachable", "rate_limited", "key_refused", "banned", "owed_banned", "owed_clear"] {
                #expect(metrics.contains(#"result="\#(result)""#) && metrics.contains("sesame_auth_device_checks_total"), "\(result)")
            }
        }
    }

    @Test("a device token counts for one key: sent again with another, it is refused, whether or not the app bans")
    func tokenReused() async throws {
        for policy in [Self.banning, AppPolicy(refreshRequiresAssertion: false)] {
            try await Self.withApple(policy: policy) { harness, apple in
                let token = apple.deviceToken(for: "iphone-f")
                #expect(try await harness.attestNewKey(deviceToken: token).1.status == .ok)
                let reused = try await harness.attestNewKey(deviceToken: token).1
                #expect(reused.status == .unauthorized && reused.errorCode == "device_token_reused", "\(reused.json)")
                #expect(try await harness.attestNewKey(deviceToken: apple.deviceToken(for: "iphone-f")).1.status == .ok)
            }
        }
    }

    @Test("without a ban bit, a token is kept but Apple is not asked; without one the attest passes as before")
    func bansOff() async throws {
        try await Self.withApple(policy: AppPolicy(refreshRequiresAssertion: false)) { harness, apple in
            apple.setBits(of: "iphone-d", bit0: true, bit1: true)
            let (key, kept) = try await harness.attestNewKey(deviceToken: apple.deviceToken(for: "iphone-d"))
            #expect(kept.status == .ok)
            #expect(try await harness.attestNewKey().1.status == .ok)
            #expect(apple.calls.withLock { $0.isEmpty })
            let rows = try await harness.database.query(
                "SELECT device_token_ciphertext IS NOT NULL FROM attested_keys WHERE key_id = \(Data(key.keyId))")
            for try await stored in rows.decode(Bool.self) { #expect(stored) }
        }
    }
}

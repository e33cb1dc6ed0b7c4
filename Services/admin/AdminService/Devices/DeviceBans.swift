import Foundation
import SesameApple
import SesameDomain
import SesameHTTP

/// Bans that outlive a reinstall: the policy's DeviceCheck bit, set (or cleared) with Apple for the
/// device that made an attested key, using the token the install sent when it attested. Apple is
/// told first and Sesame records second, so a ban Sesame shows is one Apple keeps; when Apple cannot
/// be told nothing changes (`502 apple_unavailable`), and the same request can simply be sent again.
struct DeviceBans: Sendable {
    let devices: DeviceStore
    let policies: PolicyStore
    let keys: DeviceCheckKeys
    let deviceCheck: DeviceCheckClient
    /// Calls to Apple one app's people may make by banning and lifting bans: 10 at once, then one a
    /// second. Apple rate-limits the team's key, which attests also spend. Per admin replica; past it
    /// `429 rate_limited` with `Retry-After`, before Apple is asked.
    let appleCalls = RateLimiter(.init(rate: 1, burst: 10), maximumKeys: 10_000)

    /// What one call to Apple needs: the bit, the key that signs, the device's token and server.
    struct Target {
        let bit: Int
        let key: DeviceCheckKey
        let deviceToken: String
        let development: Bool
    }

    /// Everything a ban of `keyID` needs, or why it cannot be: checked when a ban is proposed and
    /// again when it applies. `bit` is the one to use (the policy's, or the one a ban was set with).
    func target(appID: String, keyID: [UInt8], bit chosen: Int? = nil) async throws -> Target {
        let policyBit = chosen == nil ? try await policies.policy(appID: appID).deviceBanBit : nil
        guard let bit = chosen ?? policyBit else {
            throw AdminErrors.banUnavailable("the app's policy names no deviceBanBit (PUT /v1/admin/policy)")
        }
        guard let key = try await keys.key(appID: appID) else {
            throw AdminErrors.banUnavailable("the app has no DeviceCheck key (sesame apple set)")
        }
        guard let device = try await devices.banTarget(appID: appID, keyID: keyID) else { throw AdminErrors.deviceNotFound }
        guard let sealed = device.sealedDeviceToken else {
            throw AdminErrors.banUnavailable("the install sent no DeviceCheck token when it attested (a SesameKit older than bans, or DeviceCheck unavailable); revoke it without ban")
        }
        let token = try keys.openDeviceToken(sealed, appID: appID, keyID: Base64.urlEncode(keyID))
        return Target(bit: bit, key: key, deviceToken: token, development: device.development)
    }

    /// Sets the target's bit to `banned` with Apple, or throws `apple_unavailable` saying why not.
    func tellApple(_ target: Target, appID: String, banned: Bool) async throws {
        try appleCalls.enforce(appID)
        do {
            try await deviceCheck.setBit(target.bit, to: banned, deviceToken: target.deviceToken, key: target.key, development: target.development)
        } catch {
            throw AdminErrors.appleUnavailable(error)
        }
    }

    /// Bans `keyID`'s device: Apple first, then the record, the key's revocation and the audit.
    func ban(appID: String, keyID: [UInt8], reason: String, caller: Caller) async throws {
        let target = try await target(appID: appID, keyID: keyID)
        try await tellApple(target, appID: appID, banned: true)
        try await devices.ban(appID: appID, keyID: keyID, bit: target.bit, reason: reason, actor: caller.auditName)
    }

    /// Lifts `keyID`'s device's ban with the bit it was set with; `device_not_banned` when there is none.
    func unban(appID: String, keyID: [UInt8], reason: String, caller: Caller) async throws {
        guard let bit = try await devices.banBit(appID: appID, keyID: keyID) else { throw AdminErrors.deviceNotBanned }
        try await tellApple(try await target(appID: appID, keyID: keyID, bit: bit), appID: appID, banned: false)
        guard try await devices.unban(appID: appID, keyID: keyID, reason: reason, actor: caller.auditName) else { throw AdminErrors.deviceNotBanned }
    }
}

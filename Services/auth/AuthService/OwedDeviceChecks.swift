import Foundation
import Logging
import ServiceLifecycle
import SesameApple
import SesameDomain
import SesameStorage

/// Asks Apple, later, for the DeviceCheck verdicts owed: an attest admitted because Apple was down,
/// rate-limiting or refusing the app's key (or the app had no DeviceCheck key yet) is checked again
/// here, and its key revoked if the device's ban bit turns out set. Every `interval`, up to `batch`
/// due keys, at most `perApp` of one app (one app's backlog does not hold another's), one call to
/// Apple at a time (each within the outbound client's 5 s). Apple still unavailable: tried again
/// after 1, 2, 4 … minutes, at most an hour apart, for `giveUpAfter` (7 days) from the attest;
/// then, or when Apple calls the token invalid (it may have expired), the debt is dropped (counted).
struct OwedDeviceChecks: Service {
    let debts: DeviceCheckDebts
    let apps: AppDirectory
    let keys: DeviceCheckKeys
    let deviceCheck: DeviceCheckClient
    let interval: Duration
    let logger: Logger

    static let batch = 20
    static let perApp = 5
    static let giveUpAfter: TimeInterval = 7 * 86400

    func run() async throws {
        await runPeriodicRounds(every: interval, bound: .seconds(60), named: "device check", logger: logger) { [self] in _ = try await round() }
    }

    /// One round; returns how many owed checks it looked at.
    func round(now: Date = Date()) async throws -> Int {
        let due = try await debts.claim(limit: Self.batch, perApp: Self.perApp)
        for owed in due { try await check(owed, now: now) }
        return due.count
    }

    private func check(_ owed: OwedDeviceCheck, now: Date) async throws {
        // The app stopped banning since: nothing is owed.
        guard let bit = try await apps.app(appID: owed.appID)?.policy.deviceBanBit else {
            try await debts.settle(owed.keyID)
            return
        }
        guard now.timeIntervalSince(owed.attestedAt) < Self.giveUpAfter else {
            logger.warning("a DeviceCheck verdict owed for a week was dropped", metadata: ["app": "\(owed.appID)"])
            DeviceBanCheck.count(appID: owed.appID, result: "owed_expired")
            try await debts.settle(owed.keyID)
            return
        }
        guard let key = try await keys.key(appID: owed.appID) else {
            try await failed(owed, "the app has no DeviceCheck key", now: now)
            return
        }
        let token = try keys.openDeviceToken(owed.sealedToken, appID: owed.appID, keyID: Base64.urlEncode(owed.keyID))
        let bits: DeviceCheckClient.DeviceBits
        do {
            bits = try await deviceCheck.bits(deviceToken: token, key: key, development: owed.development)
        } catch .invalidDeviceToken {
            DeviceBanCheck.count(appID: owed.appID, result: "owed_invalid_token")
            try await debts.settle(owed.keyID)
            return
        } catch {
            try await failed(owed, "\(error)", now: now)
            return
        }
        try await debts.settle(owed.keyID)
        DeviceBanCheck.count(appID: owed.appID, result: bits[bit] ? "owed_banned" : "owed_clear")
        if bits[bit], try await debts.revokeBanned(owed.keyID, appID: owed.appID, bit: bit) {
            logger.info("a key admitted while Apple was down belongs to a banned device: revoked", metadata: ["app": "\(owed.appID)"])
        }
    }

    private func failed(_ owed: OwedDeviceCheck, _ why: String, now: Date) async throws {
        let failures = owed.failures + 1
        logger.info("an owed DeviceCheck verdict is still not given; asked again later", metadata: ["app": "\(owed.appID)", "reason": "\(why)"])
        let backoff = retryDelay(afterFailures: failures, cap: 3600)
        try await debts.retry(owed.keyID, failures: failures, next: now.addingTimeInterval(backoff))
    }
}

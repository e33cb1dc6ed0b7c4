import AppAttest
import Foundation
import Logging
import Metrics
import SesameApple
import SesameDomain
import SesameHTTP

/// Bans that survive a reinstall. An App Attest key dies with the install; Apple's two DeviceCheck
/// bits, kept per device for the team, do not. When the app's policy names a ban bit, every attest
/// carries the device's DeviceCheck token, and a device whose bit an admin set is refused whatever
/// key it made. Asked only after the attestation verified and the admission budget allowed it, so
/// Apple's rate limit is spent on genuine installs alone.
struct DeviceBanCheck: Sendable {
    let keys: DeviceCheckKeys
    let deviceCheck: DeviceCheckClient
    let logger: Logger

    /// The longest device token accepted (Apple's are about 2–3 KiB of base64).
    static let maximumTokenCharacters = 8192

    /// Refuses a banned device, and one that sent no token where the app bans; returns the token,
    /// sealed, to keep with the key (so an admin can ban the device later), or nil when none was sent.
    /// Apple unreachable, slow (the outbound deadline) or refusing the app's key lets the install in:
    /// logged and counted (`sesame_auth_device_checks_total`), as a ban cannot be told from an outage.
    func admit(deviceToken: String?, app: RegisteredApp, environment: AppAttestEnvironment, keyID: String) async throws -> Data? {
        if let deviceToken {
            guard (1...Self.maximumTokenCharacters).contains(deviceToken.utf8.count), Data(base64Encoded: deviceToken) != nil else {
                throw APIError.invalidField("deviceToken", "must be the base64 token of DCDevice.generateToken() (at most \(Self.maximumTokenCharacters) characters)")
            }
        }
        guard let bit = app.policy.deviceBanBit else {
            return try deviceToken.map { try keys.sealDeviceToken($0, appID: app.appID, keyID: keyID) }
        }
        guard let deviceToken else {
            AttestationMetrics.refused(appID: app.appID, .deviceCheckRequired)
            throw AuthErrors.deviceCheckRequired
        }
        let sealed = try keys.sealDeviceToken(deviceToken, appID: app.appID, keyID: keyID)
        guard let key = try await keys.key(appID: app.appID) else {
            logger.warning("the policy bans devices but the app has no DeviceCheck key: not checked", metadata: ["app": "\(app.appID)"])
            Self.count(appID: app.appID, result: "no_key")
            return sealed
        }
        let bits: DeviceCheckClient.DeviceBits
        do {
            bits = try await deviceCheck.bits(deviceToken: deviceToken, key: key, development: environment == .development)
        } catch .invalidDeviceToken {
            Self.count(appID: app.appID, result: "invalid_token")
            AttestationMetrics.refused(appID: app.appID, .deviceTokenInvalid)
            throw AuthErrors.deviceTokenInvalid
        } catch {
            logger.warning("DeviceCheck not asked: the install is admitted unchecked", metadata: ["app": "\(app.appID)", "reason": "\(error)"])
            Self.count(appID: app.appID, result: error == .rateLimited ? "rate_limited" : error == .keyRefused ? "key_refused" : "unreachable")
            return sealed
        }
        Self.count(appID: app.appID, result: bits[bit] ? "banned" : "clear")
        if bits[bit] {
            logger.info("attest from a banned device refused", metadata: ["app": "\(app.appID)"])
            AttestationMetrics.refused(appID: app.appID, .deviceBanned)
            throw AuthErrors.deviceBanned
        }
        return sealed
    }

    /// Each series' counter, made once (apps × results: bounded by the apps registered).
    private static let counters = BoundedMemo<String, Counter>()

    /// `sesame_auth_device_checks_total{app, result}`: `clear`, `banned`, `invalid_token`, and the
    /// checks not made (`rate_limited`, `key_refused`, `unreachable`, `no_key`), which admit the install.
    private static func count(appID: String, result: String) {
        counters.value(for: result + " " + appID) { _ in
            Counter(label: "sesame_auth_device_checks_total", dimensions: [("app", appID), ("result", result)])
        }.increment()
    }
}

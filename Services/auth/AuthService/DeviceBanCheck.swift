import AppAttest
import Crypto
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
/// Apple's rate limit is spent on genuine installs alone. A token counts for one key: one device's
/// token cannot stand for another's ban. When Apple cannot be asked the verdict is owed, and
/// `OwedDeviceChecks` asks again later.
struct DeviceBanCheck: Sendable {
    let keys: DeviceCheckKeys
    let debts: DeviceCheckDebts
    let deviceCheck: DeviceCheckClient
    let logger: Logger

    /// A device token admitted with a key: sealed to it, its digest (spent with the key), and
    /// whether Apple's verdict is still owed.
    struct Admitted: Sendable {
        let sealed: Data
        let digest: Data
        let checkOwed: Bool
    }

    /// The longest device token accepted (Apple's are about 2–3 KiB of base64).
    static let maximumTokenCharacters = 8192

    /// Refuses a banned device, one that sent no token where the app bans, and a token an earlier key
    /// was attested with; returns the token to keep with the key (so an admin can ban the device
    /// later), or nil when none was sent. Apple unreachable, slow (the outbound deadline) or refusing
    /// the app's key (or no key at all) lets the install in with the verdict owed: logged and
    /// counted (`sesame_auth_device_checks_total`), as a ban cannot be told from an outage.
    func admit(deviceToken: String?, app: RegisteredApp, environment: AppAttestEnvironment, keyID: String) async throws -> Admitted? {
        guard let deviceToken else {
            guard app.policy.deviceBanBit == nil else {
                AttestationMetrics.refused(appID: app.appID, .deviceCheckRequired)
                throw AuthErrors.deviceCheckRequired
            }
            return nil
        }
        guard (1...Self.maximumTokenCharacters).contains(deviceToken.utf8.count), Data(base64Encoded: deviceToken) != nil else {
            throw APIError.invalidField("deviceToken", "must be the base64 token of DCDevice.generateToken() (at most \(Self.maximumTokenCharacters) characters)")
        }
        let digest = Data(SHA256.hash(data: Data(deviceToken.utf8)))
        if try await debts.isSpent(digest, appID: app.appID) {
            Self.count(appID: app.appID, result: "token_reused")
            AttestationMetrics.refused(appID: app.appID, .deviceTokenReused)
            throw AuthErrors.deviceTokenReused
        }
        let sealed = try keys.sealDeviceToken(deviceToken, appID: app.appID, keyID: keyID)
        guard let bit = app.policy.deviceBanBit else { return Admitted(sealed: sealed, digest: digest, checkOwed: false) }
        guard let key = try await keys.key(appID: app.appID) else {
            logger.warning("the policy bans devices but the app has no DeviceCheck key: checked when it has one", metadata: ["app": "\(app.appID)"])
            Self.count(appID: app.appID, result: "no_key")
            return Admitted(sealed: sealed, digest: digest, checkOwed: true)
        }
        let bits: DeviceCheckClient.DeviceBits
        do {
            bits = try await deviceCheck.bits(deviceToken: deviceToken, key: key, development: environment == .development)
        } catch .invalidDeviceToken {
            Self.count(appID: app.appID, result: "invalid_token")
            AttestationMetrics.refused(appID: app.appID, .deviceTokenInvalid)
            throw AuthErrors.deviceTokenInvalid
        } catch {
            logger.warning("DeviceCheck not asked: the install is admitted, its verdict owed", metadata: ["app": "\(app.appID)", "reason": "\(error)"])
            Self.count(appID: app.appID, result: error == .rateLimited ? "rate_limited" : error == .keyRefused ? "key_refused" : "unreachable")
            return Admitted(sealed: sealed, digest: digest, checkOwed: true)
        }
        Self.count(appID: app.appID, result: bits[bit] ? "banned" : "clear")
        if bits[bit] {
            logger.info("attest from a banned device refused", metadata: ["app": "\(app.appID)"])
            AttestationMetrics.refused(appID: app.appID, .deviceBanned)
            throw AuthErrors.deviceBanned
        }
        return Admitted(sealed: sealed, digest: digest, checkOwed: false)
    }

    /// Each series' counter, made once (apps × results: bounded by the apps registered).
    private static let counters = BoundedMemo<String, Counter>()

    /// `sesame_auth_device_checks_total{app, result}`: `clear`, `banned`, `invalid_token`,
    /// `token_reused`; the checks not made (`rate_limited`, `key_refused`, `unreachable`, `no_key`),
    /// which admit the install with the verdict owed; and the owed ones asked later (`owed_clear`,
    /// `owed_banned`, `owed_invalid_token`, `owed_expired`).
    static func count(appID: String, result: String) {
        counters.value(for: result + " " + appID) { _ in
            Counter(label: "sesame_auth_device_checks_total", dimensions: [("app", appID), ("result", result)])
        }.increment()
    }
}

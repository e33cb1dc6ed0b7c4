import AppAttest
import Metrics
import SesameDomain

/// `sesame_auth_attestations_total{app, result}`: every attestation auth judged (a challenge redeemed
/// and admitted), by app and result: `accepted`, the step of Apple's validation that refused it
/// (`format`, `chain`, `nonce`, `keyId`, `rpIdHash`, `counter`, `aaguid`, `credentialId`), `environment`
/// (a development key the policy does not allow), `key_reused` (a key attested before), `device_banned`,
/// `device_check_required` (no DeviceCheck token while the app bans) or `device_token_invalid`. The
/// success rate an attestation ramp watches (issue 59), and what an operator alerts on.
enum AttestationMetrics {
    /// A refusal's result label.
    enum Refusal: String {
        case environment
        case keyReused = "key_reused"
        case deviceBanned = "device_banned"
        case deviceCheckRequired = "device_check_required"
        case deviceTokenInvalid = "device_token_invalid"
        case deviceTokenReused = "device_token_reused"
    }

    /// Each series' counter, made once (apps × results: bounded by the apps registered).
    private static let counters = BoundedMemo<String, Counter>()

    static func accepted(appID: String) { count(appID: appID, result: "accepted") }
    static func refused(appID: String, step: AppAttestError.Step) { count(appID: appID, result: step.rawValue) }
    static func refused(appID: String, _ refusal: Refusal) { count(appID: appID, result: refusal.rawValue) }

    /// `sesame_auth_attestation_reports_total{app, reason}`: what SesameKit reported from devices:
    /// `unsupported`, `outside_ramp`, `rate_limited` (Apple's `serverUnavailable`), `device_failed`.
    static func reported(appID: String, reason: String) {
        counters.value(for: "report " + reason + " " + appID) { _ in
            Counter(label: "sesame_auth_attestation_reports_total", dimensions: [("app", appID), ("reason", reason)])
        }.increment()
    }

    private static func count(appID: String, result: String) {
        counters.value(for: result + " " + appID) { _ in
            Counter(label: "sesame_auth_attestations_total", dimensions: [("app", appID), ("result", result)])
        }.increment()
    }
}

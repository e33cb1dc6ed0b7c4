import Metrics
import SesameConfiguration

/// Each relay's figures, labelled by app and relay name (at most 20 relays an app; neither is a
/// secret): what was asked, what the upstream answered, how long it took, what was carried.
enum RelayMetrics {
    /// `sesame_relay_requests_total{app, relay, outcome}`: `outcome` is the upstream status's class
    /// (`2xx` … `5xx`), or the code of Sesame's refusal.
    static func request(appID: String, relay: String, outcome: String) {
        Counter(label: "sesame_relay_requests_total", dimensions: [("app", appID), ("relay", relay), ("outcome", outcome)]).increment()
    }

    /// `sesame_relay_upstream_seconds{app, relay}`: from the call's start to the upstream's answer head.
    static func upstreamLatency(_ duration: Duration, appID: String, relay: String) {
        Timer(label: "sesame_relay_upstream_seconds", dimensions: [("app", appID), ("relay", relay)], preferredDisplayUnit: .seconds)
            .recordNanoseconds(duration.inNanoseconds)
    }

    /// `sesame_relay_bytes_total{app, relay, direction}`: bodies carried `up` (to the upstream) and `down`.
    static func bytes(_ count: Int, appID: String, relay: String, up: Bool) {
        guard count > 0 else { return }
        Counter(label: "sesame_relay_bytes_total", dimensions: [("app", appID), ("relay", relay), ("direction", up ? "up" : "down")])
            .increment(by: Int64(count))
    }

    /// `sesame_relay_quota_refusals_total{app, relay, quota}`.
    static func quotaRefused(appID: String, relay: String, quota: String) {
        Counter(label: "sesame_relay_quota_refusals_total", dimensions: [("app", appID), ("relay", relay), ("quota", quota)]).increment()
    }

    /// `sesame_relay_open_calls`: calls this replica is relaying now.
    static func openCalls(_ count: Int) {
        Gauge(label: "sesame_relay_open_calls").record(count)
    }
}

import Foundation
import Metrics

/// Delivery's counters beyond the request metrics every service has.
enum DeliveryMetrics {
    /// `sesame_delivery_withheld_keys_total{app}`: top-level config keys left out of answers to
    /// callers whose tier may not see them.
    static func withheld(_ keys: Int, appID: String) {
        Counter(label: "sesame_delivery_withheld_keys_total", dimensions: [("app", appID)]).increment(by: Int64(keys))
    }

    /// One periodic resync from PostgreSQL: `sesame_delivery_resyncs_total`, and the last one's
    /// `sesame_delivery_resync_last_seconds`, `…_last_apps` (apps it loaded) and `…_last_rows`
    /// (rows it read), which show whether its cost grows with the apps and their history.
    static func resynced(seconds: Double, appsLoaded: Int, rowsRead: Int) {
        Counter(label: "sesame_delivery_resyncs_total").increment()
        Gauge(label: "sesame_delivery_resync_last_seconds").record(seconds)
        Gauge(label: "sesame_delivery_resync_last_apps").record(appsLoaded)
        Gauge(label: "sesame_delivery_resync_last_rows").record(rowsRead)
    }

    /// `sesame_delivery_rollout_installs{rollout, side}`: distinct installs this replica served on
    /// each side (`included`, `excluded`) of a rollout; admin's rollout list merges every replica's.
    static func rolloutInstalls(_ count: Int, rollout: String, included: Bool) {
        Gauge(label: "sesame_delivery_rollout_installs", dimensions: [("rollout", rollout), ("side", included ? "included" : "excluded")])
            .record(count)
    }

    /// `sesame_delivery_propagation_seconds`: from a change's event being written (its
    /// `occurredAt`, in admin's transaction) to this replica serving it; the alert on its p99 and
    /// the dashboard's propagation panel read it. Clocks of different hosts differ by their NTP
    /// error, so a negative delay is recorded as zero.
    static func propagated(since occurredAt: Date, now: Date = Date()) {
        Metrics.Timer(label: "sesame_delivery_propagation_seconds", preferredDisplayUnit: .seconds)
            .recordNanoseconds(Int64(max(0, now.timeIntervalSince(occurredAt)) * 1e9))
    }
}

import Metrics

/// Delivery's counters beyond the request metrics every service has.
enum DeliveryMetrics {
    /// `sesame_delivery_withheld_keys_total{app}`: top-level config keys left out of answers to
    /// callers whose tier may not see them.
    static func withheld(_ keys: Int, appID: String) {
        Counter(label: "sesame_delivery_withheld_keys_total", dimensions: [("app", appID)]).increment(by: Int64(keys))
    }
}

/// Reads one sample from a Prometheus text exposition (a service's `GET /metrics`).
public enum MetricsText {
    /// The value of the first sample named exactly `name` whose labels contain each of `labels`
    /// (written as they appear, e.g. `result="accepted"`); nil when there is none.
    public static func value(_ name: String, labels: [String] = [], in text: String) -> Double? {
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let series = line.prefix { $0 != " " }
            let metric = series.prefix { $0 != "{" }
            guard metric == name, labels.allSatisfy({ series.contains($0) }) else { continue }
            return line.split(separator: " ").last.flatMap { Double($0) }
        }
        return nil
    }
}

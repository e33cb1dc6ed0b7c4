import Foundation

/// The soak's figures, and what in them breaks the contract: 5xx or failed requests outside the
/// fault windows (and their recovery), memory that grew over 10 % after warm-up.
struct Report {
    let text: String
    let violations: [String]

    init(recorder: Recorder, faults: FaultPlan, processes: ProcessWatch, recoveryGrace: Double) {
        let exchanges = recorder.exchanges
        var lines: [String] = []
        var violations: [String] = []
        lines.append("requests by phase and status (0: no answer):")
        let phases = Dictionary(grouping: exchanges) { faults.phase(at: $0.at, grace: recoveryGrace) }
        for (phase, items) in phases.sorted(by: { ($0.value.first?.at ?? 0) < ($1.value.first?.at ?? 0) }) {
            let statuses = Dictionary(grouping: items, by: \.status).mapValues(\.count).sorted { $0.key < $1.key }
            lines.append("  \(phase): " + statuses.map { "\($0.key): \($0.value)" }.joined(separator: ", "))
            let isFault = faults.windows.contains { $0.name == phase }
            let failed = items.filter { $0.status >= 500 || $0.status == 0 }
            if !isFault, !failed.isEmpty {
                violations.append("\(failed.count) requests got 5xx or no answer outside the fault windows (\(phase)), first at "
                    + String(format: "%.1f s: %@ → %d", failed[0].at, failed[0].endpoint, failed[0].status))
            }
        }
        lines.append("answers other than 200 and 304, by endpoint:")
        let unusual = Dictionary(grouping: exchanges.filter { $0.status != 200 && $0.status != 304 }) { "\($0.endpoint) → \($0.status)" }
        for (key, items) in unusual.sorted(by: { $0.key < $1.key }) { lines.append("  \(key): \(items.count)") }
        lines.append("latency per endpoint (answered requests):")
        for (endpoint, items) in Dictionary(grouping: exchanges.filter { $0.status != 0 }, by: \.endpoint).sorted(by: { $0.key < $1.key }) {
            let sorted = items.map(\.milliseconds).sorted()
            let percentile = { (p: Double) in sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
            lines.append(String(format: "  %@: %d requests, p50 %.1f ms, p99 %.1f ms", endpoint, sorted.count, percentile(0.5), percentile(0.99)))
        }
        lines.append("configs checked against what was published: \(recorder.configsChecked)")
        lines.append("memory (RSS MiB, after warm-up → end):")
        for sample in processes.samples {
            let warm = sample.warm.map { String(format: "%.0f", $0) } ?? "restarted"
            lines.append(String(format: "  %@: %@ → %.0f", sample.name, warm, sample.end))
            if let before = sample.warm, sample.end > before * 1.1 {
                violations.append(String(format: "%@ grew from %.0f to %.0f MiB after warm-up", sample.name, before, sample.end))
            }
        }
        text = lines.joined(separator: "\n")
        self.violations = violations
    }
}

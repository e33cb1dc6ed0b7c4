import Foundation

/// The soak's figures, and what in them breaks the contract: 5xx or failed requests outside the
/// fault windows (and their recovery), a process whose memory keeps growing after warm-up.
struct Report {
    let text: String
    let violations: [String]

    init(recorder: Recorder, faults: FaultPlan, memory: MemoryWatch, recoveryGrace: Double) {
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
        let (outageLines, outageViolations) = Self.outageFigures(exchanges, faults: faults, recoveryGrace: recoveryGrace)
        lines += outageLines
        violations += outageViolations
        lines.append(
            "configs checked against what was published: \(recorder.configsChecked) (\(recorder.unconfirmedCount) served before the "
                + "publisher had the upload's answer, checked at the end)")
        let faultsOver = faults.windows.last.map { $0.end + recoveryGrace }
        lines.append(String(format: "memory (RSS, sampled every %.0f s; judged by its slope after the faults, when the run leaves %.0f s after them):",
            Soak.memoryInterval, MemoryTrend.shortestJudged))
        for series in memory.series {
            let trend = MemoryTrend(series, warmAt: memory.warmAt ?? 0, faultsOverAt: faultsOver)
            lines.append(trend.line)
            if trend.isGrowing { violations.append("\(trend.name)'s memory is growing: \(trend.verdict)") }
        }
        text = lines.joined(separator: "\n")
        self.violations = violations
    }

    /// How long a request that needs PostgreSQL may take to be answered while it is away: the
    /// 503 the README promises within 5 s, and a second for the client.
    static let outageAnswerBound = 6.0
    /// Config from memory during the outage: p99 at most this many times the pre-fault p99 (and
    /// never judged below 100 ms, under which the machine's noise decides).
    static let memoryLatencyFactor = 3.0

    /// Outages answer fast: while PostgreSQL is stopped every request is answered, none later than
    /// the bound (those that need the database with 503); config served from memory
    /// keeps its latency. Figures per phase for the endpoints that matter.
    static func outageFigures(_ exchanges: [Recorder.Exchange], faults: FaultPlan, recoveryGrace: Double) -> ([String], [String]) {
        guard let window = faults.windows.first(where: { $0.name == "postgresql stopped" }) else { return ([], []) }
        var lines = ["while PostgreSQL was stopped (\(String(format: "%.0f–%.0f s", window.start, window.end))):"]
        var violations: [String] = []
        let during = exchanges.filter { $0.at >= window.start && $0.at < window.end }
        let unanswered = during.filter { $0.status == 0 }
        let slow = during.filter { $0.status != 0 && $0.milliseconds > outageAnswerBound * 1000 }
        lines.append("  \(during.count) requests, \(unanswered.count) unanswered, \(slow.count) answered after \(outageAnswerBound) s")
        if !unanswered.isEmpty {
            violations.append("\(unanswered.count) requests got no answer while PostgreSQL was stopped, first \(unanswered[0].endpoint)")
        }
        if let worst = slow.max(by: { $0.milliseconds < $1.milliseconds }) {
            violations.append(String(format: "%d requests took longer than %.0f s while PostgreSQL was stopped; the slowest %@ %.1f s", slow.count,
                outageAnswerBound, worst.endpoint, worst.milliseconds / 1000))
        }
        let beforeFaults = exchanges.filter { faults.phase(at: $0.at, grace: recoveryGrace) == "before faults" }
        for endpoint in Set(during.map(\.endpoint)).sorted() {
            let now = during.filter { $0.endpoint == endpoint && $0.status != 0 }
            let before = beforeFaults.filter { $0.endpoint == endpoint && $0.status != 0 }
            guard !now.isEmpty else { continue }
            let statuses = Dictionary(grouping: now, by: \.status).mapValues(\.count).sorted { $0.key < $1.key }
                .map { "\($0.key): \($0.value)" }.joined(separator: ", ")
            lines.append(String(format: "  %@: p99 %.1f ms (before faults %@); %@", endpoint, p99(now),
                before.isEmpty ? "—" : String(format: "%.1f ms", p99(before)), statuses))
            if endpoint == "GET /v1/config", !before.isEmpty {
                let allowed = max(100, memoryLatencyFactor * p99(before))
                let served = now.filter { $0.status == 200 || $0.status == 304 }
                if !served.isEmpty, p99(served) > allowed {
                    violations.append(String(format: "config from memory slowed while PostgreSQL was stopped: p99 %.1f ms, more than %.1f ms", p99(served), allowed))
                }
            }
        }
        return (lines, violations)
    }

    static func p99(_ exchanges: [Recorder.Exchange]) -> Double {
        let sorted = exchanges.map(\.milliseconds).sorted()
        return sorted[min(sorted.count - 1, Int(Double(sorted.count) * 0.99))]
    }
}

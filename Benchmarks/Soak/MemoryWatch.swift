import BenchmarkSupport
import Foundation
import Synchronization

/// The suite's service processes (found by their pid files), their resident memory sampled at an
/// interval for the whole run, one series per process (a restarted replica starts a new one), and
/// the verdict on each: memory judged by its trend after warm-up, not by two points.
final class MemoryWatch: Sendable {
    /// One process's samples.
    struct Series: Sendable {
        let name: String
        let pid: Int32
        var samples: [(at: Double, mib: Double)] = []
    }

    private struct State {
        var series: [Series] = []
        var warmAt: Double?
    }

    private let pids: URL
    private let state = Mutex(State())

    init(pids: URL) { self.pids = pids }

    /// The service processes running now, by name (`auth`, `delivery-2`, …).
    private func running() -> [String: Int32] {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: pids.path)) ?? []
        var found: [String: Int32] = [:]
        for file in files where file.hasSuffix(".pid") && (file.hasPrefix("auth") || file.hasPrefix("delivery") || file.hasPrefix("admin")) {
            let text = (try? String(contentsOf: pids.appendingPathComponent(file), encoding: .utf8)) ?? ""
            if let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) { found[String(file.dropLast(4))] = pid }
        }
        return found
    }

    func kill(_ name: String) {
        if let pid = running()[name] { Foundation.kill(pid, SIGKILL) }
    }

    /// The moment the fleet is warm: samples before it are not judged.
    func markWarm(at time: Double) { state.withLock { $0.warmAt = time } }

    /// One sample of every running process.
    func sample(at time: Double) {
        let now = running().compactMap { name, pid -> (String, Int32, Double)? in
            let mib = ResidentMemory.ofProcess(pid)
            return mib > 0 ? (name, pid, mib) : nil  // gone between listing and reading
        }
        state.withLock { state in
            for (name, pid, mib) in now {
                if let index = state.series.lastIndex(where: { $0.pid == pid && $0.name == name }) {
                    state.series[index].samples.append((time, mib))
                } else {
                    state.series.append(Series(name: name, pid: pid, samples: [(time, mib)]))
                }
            }
        }
    }

    /// Samples every `interval` seconds until `end`.
    func run(every interval: Double, until end: Double, _ recorder: Recorder) async throws {
        while recorder.now < end {
            sample(at: recorder.now)
            try await Task.sleep(for: .seconds(interval))
        }
        sample(at: recorder.now)
    }

    /// Every process's series, by name; a restarted one's after the one it replaced.
    var series: [Series] { state.withLock { $0.series }.enumerated().sorted { ($0.element.name, $0.offset) < ($1.element.name, $1.offset) }.map(\.element) }
    var warmAt: Double? { state.withLock { $0.warmAt } }

    /// Every sample as CSV (seconds, process, pid, MiB), for a plot.
    var csv: String {
        var lines = ["seconds,process,pid,rss_mib"]
        for series in series {
            for sample in series.samples { lines.append(String(format: "%.1f,%@,%d,%.2f", sample.at, series.name, series.pid, sample.mib)) }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

/// The verdict on one process's memory: the least-squares slope of its samples after the faults
/// (pools that grew while recovering from one are not a leak: the hour-long soak showed auth's
/// memory step up through the PostgreSQL outage and stay flat after it), or after warm-up in a
/// run without faults. A process is judged only on a window long enough for a slope to mean
/// something; the slope after warm-up is printed either way.
struct MemoryTrend {
    /// Growth per hour above which a process is growing.
    static let growingAbove = 5.0
    /// The shortest window judged, in seconds.
    static let shortestJudged = 600.0
    /// A replica started during the run is warm this long after it started.
    static let restartWarmUp = 60.0

    let name: String
    let firstMiB: Double
    let lastMiB: Double
    let peakMiB: Double
    /// MiB per hour over the samples after warm-up.
    let slopeAfterWarmUp: Double?
    /// MiB per hour after the faults (printed however short the window; judged only when long enough).
    let slopeAfterFaults: Double?
    let verdict: String
    let isGrowing: Bool

    /// `faultsOverAt`: when the last fault's recovery ended; nil for a run without faults.
    init(_ series: MemoryWatch.Series, warmAt: Double, faultsOverAt: Double?) {
        let start = series.samples.first?.at ?? 0
        name = start > warmAt ? String(format: "%@ (started at %.0f s)", series.name, start) : series.name
        let warm = series.samples.filter { $0.at >= max(warmAt, start + (start > warmAt ? Self.restartWarmUp : 0)) }
        firstMiB = warm.first?.mib ?? series.samples.first?.mib ?? 0
        lastMiB = series.samples.last?.mib ?? 0
        peakMiB = (warm.isEmpty ? series.samples : warm).map(\.mib).max() ?? 0
        slopeAfterWarmUp = Self.slopePerHour(warm)
        let judged = faultsOverAt.map { over in warm.filter { $0.at >= over } } ?? warm
        let judgedSeconds = (judged.last?.at ?? 0) - (judged.first?.at ?? 0)
        slopeAfterFaults = faultsOverAt != nil ? Self.slopePerHour(judged) : nil
        let window = faultsOverAt == nil ? "after warm-up" : "after the faults"
        guard judgedSeconds >= Self.shortestJudged, let slope = Self.slopePerHour(judged) else {
            isGrowing = false
            verdict = String(format: "not judged: %.0f s %@, shorter than the %.0f s a trend needs", max(0, judgedSeconds), window, Self.shortestJudged)
            return
        }
        isGrowing = slope > Self.growingAbove
        verdict = isGrowing
            ? String(format: "GROWING by %.1f MiB an hour %@", slope, window)
            : String(format: "bounded (%+.1f MiB an hour %@, under the %.0f a leak would show)", slope, window, Self.growingAbove)
    }

    /// The least-squares slope of MiB over time, per hour; nil under three samples.
    static func slopePerHour(_ samples: [(at: Double, mib: Double)]) -> Double? {
        guard samples.count >= 3 else { return nil }
        let count = Double(samples.count)
        let meanTime = samples.map(\.at).reduce(0, +) / count
        let meanMiB = samples.map(\.mib).reduce(0, +) / count
        let covariance = samples.map { ($0.at - meanTime) * ($0.mib - meanMiB) }.reduce(0, +)
        let variance = samples.map { ($0.at - meanTime) * ($0.at - meanTime) }.reduce(0, +)
        return variance > 0 ? covariance / variance * 3600 : nil
    }

    var line: String {
        let slopes = [("after warm-up", slopeAfterWarmUp), ("after the faults", slopeAfterFaults)]
            .compactMap { label, slope in slope.map { String(format: "%@ %+.1f MiB/h", label, $0) } }.joined(separator: ", ")
        return String(format: "  %@: %.0f → %.0f MiB (peak %.0f); %@; %@", name, firstMiB, lastMiB, peakMiB,
            slopes.isEmpty ? "no slope" : slopes, verdict)
    }
}

import DevSuite
import BenchmarkSupport
import Foundation
import Synchronization

/// When each fault happens, as fractions of the run: a delivery replica killed with SIGKILL and
/// restarted 10 s later, PostgreSQL stopped for 20 s, the broker stopped for 20 s. Each lasts its
/// length from when it actually began; the windows the report judges by are the actual ones.
final class FaultPlan: Sendable {
    struct Window: Sendable {
        let name: String
        let start: Double
        let end: Double
    }

    /// The schedule.
    let planned: [Window]
    private let actual = Mutex<[Window]>([])

    /// The faults as they happened (start of the fault to its repair done).
    var windows: [Window] { actual.withLock { $0 } }

    init(duration: Double) {
        planned = [
            Window(name: "delivery-2 killed", start: duration * 0.35, end: duration * 0.35 + 10),
            Window(name: "postgresql stopped", start: duration * 0.5, end: duration * 0.5 + 20),
            Window(name: "broker stopped", start: duration * 0.7, end: duration * 0.7 + 20),
        ]
    }

    var summary: String { planned.map { String(format: "%@ at %.0f–%.0f s", $0.name, $0.start, $0.end) }.joined(separator: ", ") }

    /// The phase a moment belongs to: before the first fault, a fault (with its recovery), between, after.
    func phase(at time: Double, grace: Double) -> String {
        let windows = windows
        if let window = windows.first(where: { time >= $0.start && time < $0.end + grace }) { return window.name }
        guard let first = windows.first, let last = windows.last else { return "no faults" }
        if time < first.start { return "before faults" }
        return time >= last.end + grace ? "after faults" : "between faults"
    }

    func run(suite: DevelopmentSuite, replicas: Replicas, memory: MemoryWatch, recorder: Recorder) async throws {
        // Warm: the first installs attested and fetching, before the first fault.
        try await wait(until: planned[0].start - 5, recorder)
        memory.markWarm(at: recorder.now)
        for window in planned {
            try await wait(until: window.start, recorder)
            let start = recorder.now
            let end = start + (window.end - window.start)
            progress(String(format: "soak: %.0f s: %@", recorder.now, window.name))
            switch window.name {
            case "delivery-2 killed":
                memory.kill("delivery-2")
                try await wait(until: end, recorder)
                try await suite.up(replicas)  // starts what is missing; its memory is a series of its own
            case "postgresql stopped":
                try await suite.stopDatabase()
                try await wait(until: end, recorder)
                try await suite.startDatabase()
            default:
                await suite.stopBroker()
                try await wait(until: end, recorder)
                try await suite.startBroker()
            }
            actual.withLock { $0.append(Window(name: window.name, start: start, end: recorder.now)) }
            progress(String(format: "soak: %.0f s: %@ over", recorder.now, window.name))
        }
    }

    private func wait(until time: Double, _ recorder: Recorder) async throws {
        let pause = time - recorder.now
        if pause > 0 { try await Task.sleep(for: .seconds(pause)) }
    }
}

/// Whether the outbox has been published to the end (psql against the suite's database).
struct OutboxCheck: Sendable {
    let databaseURL: String

    func waitUntilDrained(timeout: Duration) async throws -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while clock.now < deadline {
            if await unpublished() == 0 { return true }
            try await Task.sleep(for: .seconds(1))
        }
        return false
    }

    /// Nil when psql cannot tell (PostgreSQL restarting): asked again a second later.
    private func unpublished() async -> Int? {
        (try? await Psql.rows(databaseURL, "SELECT count(*) FROM outbox WHERE published_at IS NULL"))?.first?.first.flatMap { Int($0) }
    }
}

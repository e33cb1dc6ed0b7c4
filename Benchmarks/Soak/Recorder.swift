import Foundation
import Synchronization

/// Everything the soak observed, from every device and the publisher, under one lock.
final class Recorder: Sendable {
    /// One HTTP exchange a device made.
    struct Exchange: Sendable {
        let at: Double
        let endpoint: String
        /// The HTTP status; 0 when no response arrived.
        let status: Int
        let milliseconds: Double
    }

    /// A revision the publisher saw acknowledged.
    struct Publication: Sendable {
        let appID: String
        let revision: Int64
        let round: Int
        let acknowledgedAt: Double
    }

    /// A config a device was served: its revision, and the round it holds.
    struct Served: Sendable {
        let device: Int
        let appID: String
        let revision: Int64
        let round: Int?
    }

    private struct State {
        var exchanges: [Exchange] = []
        var publications: [Publication] = []
        var violations: [String] = []
        /// Configs served before the publisher had heard their upload answered: delivery serves a
        /// revision as soon as it commits, and on a loaded machine the upload's answer can reach
        /// the publisher after a device already fetched it. Judged when the run ends.
        var unconfirmed: [Served] = []
        var configsChecked = 0

        func publication(_ appID: String, revision: Int64) -> Publication? {
            publications.first { $0.appID == appID && $0.revision == revision }
        }
    }

    private let state = Mutex(State())
    let started = ContinuousClock.now

    /// Seconds since the soak began.
    var now: Double { (ContinuousClock.now - started).seconds }

    func record(_ exchange: Exchange) { state.withLock { $0.exchanges.append(exchange) } }
    func record(_ publication: Publication) { state.withLock { $0.publications.append(publication) } }
    func violation(_ text: String) { state.withLock { $0.violations.append(text) } }
    /// Keeps `served`, whose upload's answer has not reached the publisher yet, to judge at the end.
    func unconfirmed(_ served: Served) { state.withLock { $0.unconfirmed.append(served) } }
    func checkedConfig() { state.withLock { $0.configsChecked += 1 } }

    var exchanges: [Exchange] { state.withLock { $0.exchanges } }

    /// Every violation seen, and those of configs served before their upload's answer arrived:
    /// still never acknowledged, or holding another round than was published.
    var violations: [String] {
        state.withLock { state in
            state.violations + state.unconfirmed.compactMap { Self.violation(of: $0, published: state.publication($0.appID, revision: $0.revision)) }
        }
    }

    /// What is wrong with `served` given the publication of its revision, if anything.
    static func violation(of served: Served, published: Publication?) -> String? {
        guard let published else { return "device \(served.device) received revision \(served.revision) of \(served.appID), never acknowledged" }
        guard published.round == served.round else {
            return "device \(served.device): revision \(served.revision) holds round \(served.round ?? -1), published \(published.round)"
        }
        return nil
    }
    /// How many configs were served before their upload's answer reached the publisher.
    var unconfirmedCount: Int { state.withLock { $0.unconfirmed.count } }
    var configsChecked: Int { state.withLock { $0.configsChecked } }

    /// What was published for `appID` at `revision`, if it was.
    func publication(_ appID: String, revision: Int64) -> Publication? {
        state.withLock { $0.publication(appID, revision: revision) }
    }

    /// The newest revision of `appID` acknowledged at or before `time`.
    func newestRevision(of appID: String, acknowledgedBy time: Double) -> Int64? {
        state.withLock { $0.publications.filter { $0.appID == appID && $0.acknowledgedAt <= time }.map(\.revision).max() }
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

/// A progress line, written at once (standard output is buffered when it is a file).
func progress(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}

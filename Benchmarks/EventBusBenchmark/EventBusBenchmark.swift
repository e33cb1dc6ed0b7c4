import Foundation
import Logging
import PostgresNIO
import SesameEventBus
import SesameEvents
import SesameKafka
import SesameStorage
import SesameTestSupport
import Synchronization

// Measures the event bus on this machine against the PostgreSQL and broker the benchmark command
// started (`./sesame-dev bench`): relay throughput from a full outbox, and end-to-end latency
// (state change committed → a consumer sees the event) at a steady rate, per relay poll interval.

let logger: Logger = {
    var logger = Logger(label: "eventbus-benchmark")
    logger.logLevel = .error
    return logger
}()

/// A fresh, migrated database with its pool running for the duration of `body`.
func withDatabase(_ body: @escaping (Database) async throws -> Void) async throws {
    try await TestDatabase.withFreshDatabase { url in
        let database = Database(url: url, logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await database.run() }
            defer { group.cancelAll() }
            _ = try await Migrator().migrate(database.client, logger: logger)
            try await body(database)
        }
    }
}

func commit(_ envelope: EventEnvelope, on database: Database) async throws {
    try await database.client.withTransaction(logger: logger) { connection in
        // The state change: an audit entry, as every admin mutation writes one.
        try await connection.query(
            "INSERT INTO audit_log (app_id, actor, action) VALUES (\(envelope.partitionKey), 'benchmark', 'config.upload')",
            logger: logger)
        try await Outbox.append(envelope, on: connection, logger: logger)
    }
}

/// An event for `appID`; each has an id of its own, by which arrivals are matched to commits.
func event(appID: String) -> EventEnvelope {
    EventEnvelope(appID: appID, event: .appChanged)
}

func unpublished(_ database: Database) async throws -> Int {
    var count = 0
    for try await value in try await database.client.query("SELECT count(*) FROM outbox WHERE published_at IS NULL", logger: logger).decode(Int.self) {
        count = value
    }
    return count
}

/// Instants by event id (commits on one side, arrivals on the other), and the commit order.
final class CommitTimes: Sendable {
    private let times = Mutex<[UUID: ContinuousClock.Instant]>([:])
    private let order = Mutex<[Int: UUID]>([:])
    func record(_ id: UUID, at instant: ContinuousClock.Instant, order position: Int? = nil) {
        times.withLock { $0[id] = instant }
        if let position { order.withLock { $0[position] = id } }
    }
    func take(_ id: UUID) -> ContinuousClock.Instant? { times.withLock { $0.removeValue(forKey: id) } }
    /// Every recorded (id, instant), in the order given when recording.
    func inOrder() -> [(UUID, ContinuousClock.Instant)] {
        let ids = order.withLock { $0.sorted { $0.key < $1.key }.map(\.value) }
        return times.withLock { times in ids.map { ($0, times[$0]!) } }
    }
}

func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
    sorted[min(sorted.count - 1, Int((Double(sorted.count) * fraction).rounded(.up)) - 1)]
}

@main
enum EventBusBenchmark {
    static func main() async throws {
        try await run()
    }

    /// Off the main actor, so the work below may hand closures to the task groups it starts.
    nonisolated static func run() async throws {
        let kafka = KafkaConfiguration(brokers: try TestKafka.brokers(), clientID: "benchmark")
        let rate = Int(ProcessInfo.processInfo.environment["BENCH_RATE"] ?? "") ?? 500
        let seconds = Int(ProcessInfo.processInfo.environment["BENCH_SECONDS"] ?? "") ?? 10
        let backlogSize = Int(ProcessInfo.processInfo.environment["BENCH_BACKLOG"] ?? "") ?? 20_000
        try await KafkaTopicAdministrator(configuration: kafka).ensureTopics(EventTopic.all, partitions: 3)

        // MARK: Throughput: a full outbox drained by one relay.

        try await withDatabase { database in
            let appIDs = (0..<20).map { "BENCH.throughput.app\($0)" }
            try await database.client.withConnection { connection in
                for start in stride(from: 0, to: backlogSize, by: 1000) {
                    try await connection.query("BEGIN", logger: logger)
                    for index in start..<min(start + 1000, backlogSize) {
                        try await Outbox.append(event(appID: appIDs[index % appIDs.count]), on: connection, logger: logger)
                    }
                    try await connection.query("COMMIT", logger: logger)
                }
            }
            let producer = try KafkaProducer(configuration: kafka, logger: logger)
            let relay = OutboxRelay(database: database, producer: producer, topics: nil, logger: logger)
            let started = ContinuousClock.now
            try await withRunningServices([producer, relay], logger: logger) {
                while try await unpublished(database) > 0 { try await Task.sleep(for: .milliseconds(20)) }
            }
            let elapsed = ContinuousClock.now - started
            let perSecond = Double(backlogSize) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
            print("relay throughput: \(backlogSize) events drained in \(elapsed.formatted(.units(allowed: [.seconds, .milliseconds]))) = \(Int(perSecond)) events/s (batch 500)")
        }

        // MARK: Latency: a steady rate of committed changes, seen by a broadcast consumer.

        for pollMilliseconds in [10, 50, 100] {
            try await withDatabase { database in
                let appID = "BENCH.latency.\(UUID().uuidString.prefix(8))"
                let total = rate * seconds
                let producer = try KafkaProducer(configuration: kafka, logger: logger)
                let relay = OutboxRelay(
                    database: database, producer: producer, topics: nil,
                    configuration: OutboxRelayConfiguration(pollInterval: .milliseconds(pollMilliseconds)), logger: logger)
                let consumer = try KafkaBroadcastConsumer(
                    configuration: kafka, topics: [EventTopic.configChanges], startPosition: .end, logger: logger)
                let stream = EventStream(consumer: consumer, logger: logger)
                let commits = CommitTimes()

                try await withRunningServices([producer, relay, consumer], logger: logger) {
                    while !consumer.isAssigned { try await Task.sleep(for: .milliseconds(20)) }
                    let arrivals = CommitTimes()
                    async let consumed: Void = {
                        var count = 0
                        for await envelope in stream where envelope.appID == appID {
                            arrivals.record(envelope.id, at: .now)
                            count += 1
                            if count == total { break }
                        }
                    }()
                    // Four writers, each at a quarter of the rate, paced against the clock.
                    let writers = 4
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        for writer in 0..<writers {
                            group.addTask {
                                let interval = Duration.seconds(1) / (rate / writers)
                                let start = ContinuousClock.now
                                for index in 0..<(total / writers) {
                                    try await Task.sleep(until: start + interval * index, clock: .continuous)
                                    let envelope = event(appID: appID)
                                    try await commit(envelope, on: database)
                                    commits.record(envelope.id, at: .now, order: index * writers + writer)
                                }
                            }
                        }
                        try await group.waitForAll()
                    }
                    await consumed
                    // Latency per event in commit order; the first second is reported apart (the
                    // producer connects and the topic's metadata is fetched while it runs).
                    let latencies = commits.inOrder().map { id, committed in
                        let latency = arrivals.take(id)! - committed
                        return Double(latency.components.attoseconds) / 1e15 + Double(latency.components.seconds) * 1000
                    }
                    for (label, slice) in [("all", latencies[...]), ("after the first second", latencies.dropFirst(rate))] {
                        let sorted = slice.sorted()
                        print(
                            "latency at \(rate) events/s for \(seconds) s, relay poll \(pollMilliseconds) ms, \(label): "
                                + "p50 \(String(format: "%.1f", percentile(sorted, 0.50))) ms, p99 \(String(format: "%.1f", percentile(sorted, 0.99))) ms, "
                                + "max \(String(format: "%.1f", sorted.last ?? 0)) ms (\(sorted.count) events)")
                    }
                }
            }
        }
    }
}

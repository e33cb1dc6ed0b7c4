import Foundation
import Logging
import Metrics
import PostgresNIO
import ServiceLifecycle
import SesameConfiguration
import Synchronization
import SesameEvents
import SesameKafka
import SesameStorage
import SesameTracing
import Tracing

/// Publishes outbox rows to Kafka, in order, and marks each published only after the broker
/// acknowledged it.
///
/// Several relays may run (one per admin instance): each batch runs in a transaction that first
/// takes a transaction-level advisory lock, so exactly one relay publishes at a time and rows go
/// out in id order — which keeps every app's events in order. A relay that finds the lock taken
/// simply tries again later. While Kafka or PostgreSQL is down it retries with backoff; nothing is
/// lost, because a row leaves the "unpublished" state only in the transaction that saw its
/// acknowledgement. Delivery is at least once: a crash between acknowledgement and commit
/// publishes a row again, and consumers drop it by event id.
public final class OutboxRelay: Service, Sendable {
    /// The advisory lock key relays agree on ("outbox" as a number).
    static let advisoryLockKey: Int64 = 0x6F75_7462_6F78

    private let database: Database
    private let producer: KafkaProducer
    private let topics: KafkaTopicAdministrator?
    private let configuration: OutboxRelayConfiguration
    private let logger: Logger
    private let publishLatency = Timer(label: "sesame_outbox_publish_latency")
    private let backlog = Gauge(label: "sesame_outbox_backlog")
    private let kafkaAccepting = Atomic<Bool>(false)

    /// Whether the topics exist and the latest batch, if any, was acknowledged by Kafka: while
    /// false, changes wait in the outbox.
    public var isPublishing: Bool { kafkaAccepting.load(ordering: .acquiring) }

    /// Creates a relay. With `topics`, it first creates the Sesame topics (`EventTopic.all`).
    public init(
        database: Database, producer: KafkaProducer, topics: KafkaTopicAdministrator?,
        configuration: OutboxRelayConfiguration = OutboxRelayConfiguration(), logger: Logger
    ) {
        self.database = database
        self.producer = producer
        self.topics = topics
        self.configuration = configuration
        self.logger = logger
    }

    /// Publishes until graceful shutdown. A batch in flight is finished, never abandoned halfway.
    public func run() async throws {
        var backoff = configuration.retryBackoff
        var lastPrune = ContinuousClock.now
        var lastBacklogReading = ContinuousClock.now - .seconds(60)
        var lastTopicCheck = ContinuousClock.now
        // Nothing is published before the topics exist.
        var topicsMayBeMissing = true
        var topicsReady = false
        while !isStopping {
            // The relay creates the topics at start, and gives a broker that lost them (restarted
            // without storage, or replaced) them back: after Kafka failed a batch, and every ten
            // seconds. Without it, a topic no event went to since would appear only with its next
            // event, and consumers waiting on it would notice it only at their next metadata refresh.
            if let topics, topicsMayBeMissing || ContinuousClock.now - lastTopicCheck > .seconds(10) {
                lastTopicCheck = .now
                do {
                    try await bounded { try await topics.ensureTopics(EventTopic.all, partitions: self.configuration.topicPartitions) }
                    topicsMayBeMissing = false
                    if !topicsReady {
                        topicsReady = true
                        logger.info("kafka topics ready", metadata: ["kafka.topics": "\(EventTopic.all.joined(separator: ","))"])
                        kafkaAccepting.store(true, ordering: .releasing)
                    }
                } catch {
                    logger.warning("could not create kafka topics; retrying", metadata: ["kafka.error": "\(String(reflecting: error))"])
                    await pause(backoff)
                    backoff = min(backoff * 2, configuration.maxRetryBackoff)
                    continue
                }
            }
            do {
                let outcome = try await bounded { try await self.publishBatch() }
                if topics == nil || outcome.published > 0 || outcome.failure != nil {
                    kafkaAccepting.store(outcome.failure == nil, ordering: .releasing)
                }
                if let failure = outcome.failure {
                    topicsMayBeMissing = true
                    logger.warning(
                        "outbox rows not acknowledged by kafka; retrying",
                        metadata: ["outbox.published": "\(outcome.published)", "kafka.error": "\(failure)"])
                    await pause(backoff)
                    backoff = min(backoff * 2, configuration.maxRetryBackoff)
                    continue
                }
                backoff = configuration.retryBackoff
                if ContinuousClock.now - lastBacklogReading > .seconds(1) {
                    lastBacklogReading = .now
                    backlog.record(try await bounded { try await self.unpublishedCount() })
                }
                if ContinuousClock.now - lastPrune > configuration.pruneInterval {
                    lastPrune = .now
                    _ = try await bounded { try await self.prune() }
                }
                // A full batch means more may be waiting: go again at once.
                if outcome.published < configuration.batchSize {
                    await pause(configuration.pollInterval)
                }
            } catch {
                if isStopping { break }
                // PostgreSQL is away, or at start the outbox table is not migrated yet.
                logger.warning("outbox relay could not read the outbox; retrying", metadata: ["error": "\(String(reflecting: error))"])
                await pause(backoff)
                backoff = min(backoff * 2, configuration.maxRetryBackoff)
            }
        }
    }

    /// What one batch did.
    struct BatchOutcome {
        /// Rows published and marked.
        var published: Int
        /// Why the rest of the batch was not, if it was not.
        var failure: KafkaError?
    }

    /// Publishes the oldest unpublished rows, if this relay holds the lock; marks the acknowledged
    /// prefix published in the same transaction.
    func publishBatch() async throws -> BatchOutcome {
        let logger = self.logger
        let producer = self.producer
        let batchSize = configuration.batchSize
        // Watched: a batch on a connection PostgreSQL closed (a restart, a failover) would otherwise
        // wait forever, and with it every event after it.
        let (outcome, latencies) = try await database.client.withWatchedTransaction(logger: logger, limit: configuration.stepTimeout) { connection in
            let lock = try await connection.query("SELECT pg_try_advisory_xact_lock(\(Self.advisoryLockKey))", logger: logger)
            var locked = false
            for try await value in lock.decode(Bool.self) { locked = value }
            guard locked else { return (BatchOutcome(published: 0, failure: nil), [Double]()) }

            let rows = try await connection.query(
                """
                SELECT id, topic, event_key, payload, trace_parent FROM outbox
                WHERE published_at IS NULL ORDER BY id LIMIT \(batchSize) FOR UPDATE
                """,
                logger: logger
            )
            var ids: [Int64] = []
            var messages: [KafkaOutgoingMessage] = []
            var publishing = PublishSpans()
            do {
                for try await (id, topic, key, payload, traceParent) in rows.decode((Int64, String, String, ByteBuffer, String?).self) {
                    ids.append(id)
                    let headers = publishing.start(topic: topic, continuing: traceParent)
                    messages.append(KafkaOutgoingMessage(topic: topic, key: key, value: Array(buffer: payload), headers: headers))
                }
            } catch {
                // The batch rolls back and goes out again later: its spans so far end as failed.
                publishing.end(failedBy: error)
                throw error
            }
            guard !messages.isEmpty else { return (BatchOutcome(published: 0, failure: nil), []) }

            let results = await producer.send(batch: messages)
            publishing.end(with: results)
            // Only the acknowledged prefix is marked: a later row must not be marked while an
            // earlier one of possibly the same app is retried.
            let acknowledged = results.prefix { if case .success = $0 { true } else { false } }.count
            var failure: KafkaError?
            if acknowledged < results.count, case .failure(let error) = results[acknowledged] { failure = error }
            guard acknowledged > 0 else { return (BatchOutcome(published: 0, failure: failure), []) }

            let marked = try await connection.query(
                """
                UPDATE outbox SET published_at = clock_timestamp()
                WHERE id = ANY(\(Array(ids.prefix(acknowledged))))
                RETURNING EXTRACT(EPOCH FROM published_at - created_at)::float8
                """,
                logger: logger
            )
            var latencies: [Double] = []
            for try await seconds in marked.decode(Double.self) { latencies.append(seconds) }
            return (BatchOutcome(published: acknowledged, failure: failure), latencies)
        }
        for seconds in latencies { publishLatency.recordNanoseconds(Int64(seconds * 1_000_000_000)) }
        return outcome
    }

    /// Rows not yet published.
    func unpublishedCount() async throws -> Int {
        let rows = try await database.client.query("SELECT count(*) FROM outbox WHERE published_at IS NULL", logger: logger)
        var count = 0
        for try await value in rows.decode(Int.self) { count = value }
        return count
    }

    /// Deletes published rows older than the retention period.
    @discardableResult
    func prune() async throws -> Int {
        let seconds = Double(configuration.retention.wholeSeconds)
        let rows = try await database.client.query(
            """
            WITH pruned AS (
                DELETE FROM outbox
                WHERE published_at IS NOT NULL AND published_at < now() - make_interval(secs => \(seconds))
                RETURNING 1
            ) SELECT count(*) FROM pruned
            """,
            logger: logger
        )
        var count = 0
        for try await value in rows.decode(Int.self) { count = value }
        if count > 0 { logger.info("pruned published outbox rows", metadata: ["outbox.pruned": "\(count)"]) }
        return count
    }

    private var isStopping: Bool { Task.isShuttingDownGracefully || Task.isCancelled }

    /// Runs one database step with a time limit (PostgresNIO waits a minute for a connection while
    /// PostgreSQL is down), abandoning it on graceful shutdown. An abandoned batch rolls back: its
    /// rows stay unpublished and go out again later, possibly twice, never lost.
    private func bounded<Result: Sendable>(_ step: @escaping @Sendable () async throws -> Result) async throws -> Result {
        let limit = configuration.stepTimeout
        return try await cancelWhenGracefulShutdown { try await withTimeout(limit, step) }
    }

    /// Sleeps, waking early on graceful shutdown.
    private func pause(_ duration: Duration) async {
        try? await cancelWhenGracefulShutdown { try await Task.sleep(for: duration) }
    }
}

/// The relay's spans for one batch: one per row its writer traced, continuing the writer's trace,
/// whose context the message carries in its headers to every consumer.
private struct PublishSpans {
    private var spans: [(index: Int, span: any Span)] = []
    private var count = 0

    /// Starts the span of the next message and returns the headers it goes with (none when the
    /// row was not traced or this process does not trace).
    mutating func start(topic: String, continuing traceParent: String?) -> [String: String] {
        defer { count += 1 }
        guard SesameTracing.isEnabled, let traceParent else { return [:] }
        let span = startSpan(
            "publish \(topic)", context: SesameTracing.context(continuing: ["traceparent": traceParent]), ofKind: .producer)
        span.attributes["messaging.system"] = "kafka"
        span.attributes["messaging.destination.name"] = topic
        spans.append((count, span))
        return SesameTracing.currentHeaders(span.context)
    }

    /// Ends every span started so far, failed: the batch was given up before Kafka was asked.
    func end(failedBy error: any Error) {
        for (_, span) in spans {
            SesameTracing.recordFailure(error, on: span)
            span.end()
        }
    }

    /// Ends every span once Kafka answered for its message.
    func end(with results: [KafkaDeliveryResult]) {
        for (index, span) in spans {
            if index < results.count, case .failure(let error) = results[index] {
                SesameTracing.recordFailure("\(error.kind)", on: span)
            }
            span.end()
        }
    }
}

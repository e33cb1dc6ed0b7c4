import Logging
import Metrics
import SesameEvents
import SesameKafka
import Synchronization

/// The events of a broadcast consumer, decoded, each delivered once.
///
/// A message that is not a usable event (malformed, a newer major version, an unknown type) is
/// logged, counted and skipped; the stream goes on. A message whose event id was seen recently is
/// dropped, so the at-least-once delivery of Kafka reaches callers as exactly once in practice.
public struct EventStream: AsyncSequence, Sendable {
    public typealias Element = EventEnvelope

    private let messages: AsyncStream<KafkaMessage>
    private let statistics: EventStreamStatistics
    private let deduplicationWindow: Int
    private let logger: Logger

    /// Decodes the messages of `consumer`, remembering the last `deduplicationWindow` event ids.
    public init(
        consumer: KafkaBroadcastConsumer, statistics: EventStreamStatistics = EventStreamStatistics(),
        deduplicationWindow: Int = 10_000, logger: Logger
    ) {
        self.init(messages: consumer.messages, statistics: statistics, deduplicationWindow: deduplicationWindow, logger: logger)
    }

    /// Decodes `messages` (tests feed messages directly).
    public init(
        messages: AsyncStream<KafkaMessage>, statistics: EventStreamStatistics = EventStreamStatistics(),
        deduplicationWindow: Int = 10_000, logger: Logger
    ) {
        self.messages = messages
        self.statistics = statistics
        self.deduplicationWindow = deduplicationWindow
        self.logger = logger
    }

    public func makeAsyncIterator() -> Iterator {
        Iterator(
            messages: messages.makeAsyncIterator(), seen: RecentEventIDs(capacity: deduplicationWindow), statistics: statistics,
            logger: logger)
    }

    /// Pulls messages until one is a new, usable event.
    public struct Iterator: AsyncIteratorProtocol {
        var messages: AsyncStream<KafkaMessage>.Iterator
        var seen: RecentEventIDs
        let statistics: EventStreamStatistics
        let logger: Logger

        public mutating func next() async -> EventEnvelope? {
            while let message = await messages.next() {
                var envelope: EventEnvelope
                do {
                    envelope = try EventCodec.decode(message.value)
                    envelope.traceHeaders = message.headers
                } catch {
                    statistics.recordRejected(reason: error.reason)
                    logger.error(
                        "skipped an event that cannot be decoded",
                        metadata: [
                            "event.error": "\(String(reflecting: error))", "kafka.topic": "\(message.topic)",
                            "kafka.partition": "\(message.partition)", "kafka.offset": "\(message.offset)",
                        ])
                    continue
                }
                guard seen.insert(envelope.id) else {
                    statistics.recordDuplicate()
                    continue
                }
                statistics.recordDelivered()
                return envelope
            }
            return nil
        }
    }
}

/// Counts what an event stream did with its messages; also exported as metrics.
public final class EventStreamStatistics: Sendable {
    private let delivered = Atomic<Int>(0)
    private let rejected = Atomic<Int>(0)
    private let duplicates = Atomic<Int>(0)

    /// Creates zeroed counters.
    public init() {}

    /// Events handed to the caller.
    public var deliveredCount: Int { delivered.load(ordering: .relaxed) }
    /// Messages skipped because they were not usable events.
    public var rejectedCount: Int { rejected.load(ordering: .relaxed) }
    /// Events dropped because their id was seen before.
    public var duplicateCount: Int { duplicates.load(ordering: .relaxed) }

    func recordDelivered() {
        delivered.add(1, ordering: .relaxed)
        Counter(label: "sesame_events_consumed_total").increment()
    }

    func recordRejected(reason: String) {
        rejected.add(1, ordering: .relaxed)
        Counter(label: "sesame_events_rejected_total", dimensions: [("reason", reason)]).increment()
    }

    func recordDuplicate() {
        duplicates.add(1, ordering: .relaxed)
        Counter(label: "sesame_events_duplicates_total").increment()
    }
}

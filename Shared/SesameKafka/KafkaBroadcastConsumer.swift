import Foundation
import Logging
import Metrics
import ServiceLifecycle
import SesameConfiguration

/// A consumer that reads every partition of its topics, so every instance of a service sees every
/// event (cache invalidation, not a work queue).
///
/// It joins no consumer group: partitions are assigned directly, which takes effect at once
/// instead of after a group rebalance, and a group id of its own keeps it apart from every other
/// instance. Nothing is committed; a restarted instance starts again from `startPosition`.
/// If a position no longer exists (retention, or a broker that lost its log) it restarts from the
/// earliest offset: delivery is at least once, so callers must be idempotent.
///
/// Run it as a `Service` and iterate `messages`; the sequence ends after graceful shutdown. It holds
/// at most `consumerBufferCapacity` messages the caller has not taken: past that, newer ones are
/// dropped, counted, and `reconnections` asks the caller to catch up.
public final class KafkaBroadcastConsumer: Service, Sendable {
    /// Where a new consumer starts reading.
    public enum StartPosition: Sendable {
        /// The oldest retained message.
        case beginning
        /// Only messages written after the consumer was assigned.
        case end

        var offset: Int64 {
            switch self {
            case .beginning: -2  // RD_KAFKA_OFFSET_BEGINNING
            case .end: -1  // RD_KAFKA_OFFSET_END
            }
        }
    }

    /// Every message read, in partition order (except those dropped while the buffer was full).
    public let messages: AsyncStream<KafkaMessage>
    private let sink: AsyncStream<KafkaMessage>.Continuation
    /// An element once the partitions are assigned and each time the broker answers again after
    /// it was unreachable: what was written before, or meanwhile, may never arrive (a broker that
    /// lost its log), so callers catch up from their source of truth. Repeated elements before one
    /// is taken are coalesced.
    public let reconnections: AsyncStream<Void>
    private let reconnected: AsyncStream<Void>.Continuation
    private let client: RdKafkaClient
    private let topics: [String]
    private let startPosition: StartPosition
    private let configuration: KafkaConfiguration
    private let logger: Logger
    private let stop = OneWayFlag()
    private let assigned = OneWayFlag()
    private let reachability = BrokerReachability()

    /// Whether every partition of every topic has been assigned: from now on nothing written to
    /// them is missed.
    public var isAssigned: Bool { assigned.isRaised }

    /// Whether the consumer is assigned and its last look at the broker (every two seconds)
    /// reached it: while false, events may be arriving late.
    public var isReceiving: Bool { assigned.isRaised && reachability.isReachable }

    /// Creates a consumer of `topics`; it starts reading when `run()` is called.
    public init(
        configuration: KafkaConfiguration, topics: [String], startPosition: StartPosition, logger: Logger
    ) throws(KafkaError) {
        let groupID = "\(configuration.clientID)-broadcast-\(UUID().uuidString.lowercased())"
        self.client = try RdKafkaClient(kind: .consumer, properties: configuration.consumerProperties(groupID: groupID))
        (self.messages, self.sink) = AsyncStream.makeStream(
            of: KafkaMessage.self, bufferingPolicy: .bufferingOldest(max(1, configuration.consumerBufferCapacity)))
        (self.reconnections, self.reconnected) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        self.topics = topics
        self.startPosition = startPosition
        self.configuration = configuration
        self.logger = logger
    }

    /// Reads until graceful shutdown, on a thread of its own.
    public func run() async throws {
        let loop = ConsumerLoop(
            client: client, topics: topics, startPosition: startPosition, pollMilliseconds: configuration.pollTimeout.inMilliseconds,
            sink: sink, stop: stop, assigned: assigned, reachability: reachability, reconnected: reconnected, logger: logger)
        async let finished: Void = DedicatedThread.run(name: "sesame-kafka-consumer") { loop.run() }
        try? await gracefulShutdown()
        stop.raise()
        await finished
        sink.finish()
        reconnected.finish()
    }
}

/// The blocking read loop of a broadcast consumer. Runs on its own thread only.
private struct ConsumerLoop: Sendable {
    let client: RdKafkaClient
    let topics: [String]
    let startPosition: KafkaBroadcastConsumer.StartPosition
    let pollMilliseconds: Int
    let sink: AsyncStream<KafkaMessage>.Continuation
    let stop: OneWayFlag
    let assigned: OneWayFlag
    let reachability: BrokerReachability
    let reconnected: AsyncStream<Void>.Continuation
    let logger: Logger

    private struct PartitionID: Hashable {
        var topic: String
        var partition: Int32
    }

    private var isStopping: Bool { stop.isRaised }

    /// Hands `message` to the caller. When it does not fit in the buffer the caller is behind:
    /// what it misses it must read from its source of truth, so it is asked to catch up after
    /// every drop (requests coalesce; the last one comes after the last drop). Logged once per run
    /// of drops. Returns whether this message was dropped.
    private func deliver(_ message: KafkaMessage, afterDrop dropping: Bool) -> Bool {
        guard case .dropped = sink.yield(message) else { return false }
        Counter(label: "sesame_kafka_consumer_dropped_total").increment()
        if !dropping {
            logger.warning("kafka consumer buffer full: dropping messages; asking for a catch-up from the source of truth")
        }
        reconnected.yield()
        return true
    }
    private static let beginning = KafkaBroadcastConsumer.StartPosition.beginning.offset

    func run() {
        defer { client.close() }
        var partitionCounts: [String: Int] = [:]
        for topic in topics {
            guard let count = waitForTopic(topic) else { return }
            partitionCounts[topic] = count
        }
        // Finding the end offsets needs the broker: keep trying while it is away. Every partition
        // has a position from here on, so a log that shrinks below it is noticed.
        var positions: [PartitionID: Int64]
        while true {
            if let resolved = assign(partitionCounts, positions: [:]) {
                positions = resolved
                break
            }
            if isStopping { return }
            Thread.sleep(forTimeInterval: 0.5)
        }
        reachability.record(true)
        assigned.raise()
        // What was written before the assignment (at start, or while the broker was away) is not
        // read: tell the caller to catch up now rather than at its next periodic repair.
        reconnected.yield()

        var lastHousekeeping = ContinuousClock.now
        var dropping = false
        // Topics the broker said it no longer has: when one is back, it is a new log.
        var goneTopics: Set<String> = []
        // After the connection failed, look often until the broker answers: a broker that
        // restarted without its log must be caught with its topics missing, before anyone
        // creates them again and writes past this consumer's positions.
        var brokerInDoubt = false
        while !isStopping {
            switch client.consumerPoll(milliseconds: pollMilliseconds) {
            case .message(let message):
                positions[PartitionID(topic: message.topic, partition: message.partition)] = message.offset + 1
                dropping = deliver(message, afterDrop: dropping)
            case .partitionGone(let reason):
                for topic in topics where reason.hasPrefix("\(topic) [") && goneTopics.insert(topic).inserted {
                    logger.warning("kafka topic gone from the broker; waiting for it to come back", metadata: ["kafka.topic": "\(topic)"])
                }
                brokerInDoubt = true
            case .brokersUnreachable(let reason):
                // Routine while a broker restarts; librdkafka reconnects itself.
                logger.debug("kafka consumer lost its broker", metadata: ["kafka.error": "\(reason)"])
                brokerInDoubt = true
            case .error(let reason):
                logger.debug("kafka consumer error", metadata: ["kafka.error": "\(reason)"])
            case .nothing:
                break
            }
            if ContinuousClock.now - lastHousekeeping > (brokerInDoubt ? .milliseconds(250) : .seconds(2)) {
                lastHousekeeping = .now
                recordLag(positions: positions)
                let (grown, missing) = partitionsGrown(partitionCounts)
                var recreated: Set<String> = []
                if let missing {
                    brokerInDoubt = false
                    recreated = goneTopics.subtracting(missing)
                    for topic in recreated {
                        logger.notice("kafka topic back on the broker; reading its new log from the beginning", metadata: ["kafka.topic": "\(topic)"])
                    }
                    for topic in missing where !goneTopics.contains(topic) {
                        logger.warning("kafka topic gone from the broker; waiting for it to come back", metadata: ["kafka.topic": "\(topic)"])
                    }
                    goneTopics = missing
                }
                let shrunk = partitionsWhoseLogShrank(positions: positions)
                if grown != partitionCounts || !shrunk.isEmpty || !recreated.isEmpty {
                    // A partition added since the start holds only what this consumer has not
                    // seen (a recreated topic, too, may have gained partitions): read it whole.
                    for (topic, count) in grown {
                        for partition in Int32(partitionCounts[topic] ?? 0)..<Int32(count) {
                            positions[PartitionID(topic: topic, partition: partition)] = Self.beginning
                        }
                    }
                    partitionCounts = grown
                    for partition in shrunk { positions[partition] = Self.beginning }
                    // A topic that came back is a new log: its end may already have reached our
                    // old position, so comparing the two (above) cannot be trusted to notice.
                    for topic in recreated {
                        for partition in 0..<Int32(grown[topic] ?? 0) {
                            positions[PartitionID(topic: topic, partition: partition)] = Self.beginning
                        }
                    }
                    if !recreated.isEmpty || !shrunk.isEmpty {
                        // What was written to the lost log and never read is gone with it.
                        reconnected.yield()
                    }
                    if let resolved = assign(partitionCounts, positions: positions) { positions = resolved }
                }
            }
        }
    }

    /// Waits until the broker knows `topic`; nil if stopped first.
    private func waitForTopic(_ topic: String) -> Int? {
        var warned = false
        while !isStopping {
            if let count = try? client.partitionCount(topic: topic, timeoutMilliseconds: 2000) { return count }
            if !warned {
                logger.warning("waiting for kafka topic", metadata: ["kafka.topic": "\(topic)"])
                warned = true
            }
            Thread.sleep(forTimeInterval: 0.25)
        }
        return nil
    }

    /// Assigns every partition, resuming where known and otherwise at the start position; returns
    /// the positions assigned, or nil if it could not.
    private func assign(_ partitionCounts: [String: Int], positions: [PartitionID: Int64]) -> [PartitionID: Int64]? {
        var resolved = positions
        do {
            for (topic, count) in partitionCounts {
                for partition in 0..<Int32(count) where resolved[PartitionID(topic: topic, partition: partition)] == nil {
                    resolved[PartitionID(topic: topic, partition: partition)] = try startOffset(topic: topic, partition: partition)
                }
            }
            try client.assign(resolved.map { ($0.key.topic, $0.key.partition, $0.value) }.sorted { ($0.0, $0.1) < ($1.0, $1.1) })
            return resolved
        } catch {
            logger.error("kafka consumer could not assign partitions", metadata: ["kafka.error": "\(String(reflecting: error))"])
            return nil
        }
    }

    /// Where a partition without a known position starts. "The end" is asked of the broker now:
    /// librdkafka would resolve its logical end offset only at the first fetch, after `assigned`
    /// is raised, and miss what is written in between.
    private func startOffset(topic: String, partition: Int32) throws(KafkaError) -> Int64 {
        switch startPosition {
        case .beginning: startPosition.offset
        case .end: try client.queryHighWatermark(topic: topic, partition: partition, timeoutMilliseconds: 5000)
        }
    }

    /// The partition counts now, larger where partitions were added since the consumer started,
    /// and the topics the broker does not have (nil if it did not answer). Records whether the
    /// broker answered.
    private func partitionsGrown(_ counts: [String: Int]) -> (counts: [String: Int], missing: Set<String>?) {
        var updated = counts
        var answered = false
        var missing: Set<String> = []
        for topic in topics {
            let count: Int?
            do { count = try client.partitionCount(topic: topic, timeoutMilliseconds: 1000) } catch { continue }
            answered = true
            if count == nil { missing.insert(topic) }
            if let count, count > (counts[topic] ?? 0) {
                logger.notice("kafka topic gained partitions; reassigning", metadata: ["kafka.topic": "\(topic)"])
                updated[topic] = count
            }
        }
        if answered, !reachability.isReachable {
            logger.notice("kafka broker reachable again", metadata: ["kafka.topics": "\(topics.joined(separator: ","))"])
            reconnected.yield()
        }
        reachability.record(answered)
        return (updated, answered ? missing : nil)
    }

    /// Partitions whose log now ends before our position: the topic was recreated or the broker
    /// lost its log (Tansu in memory after a restart). Such a broker answers fetches past its end
    /// with nothing rather than "offset out of range", so without this the consumer would wait
    /// forever; it starts over from the beginning instead (consumers drop repeats by event id).
    private func partitionsWhoseLogShrank(positions: [PartitionID: Int64]) -> [PartitionID] {
        positions.compactMap { id, position in
            guard position >= 0, let high = client.cachedHighWatermark(topic: id.topic, partition: id.partition), high < position
            else { return nil }
            logger.warning(
                "kafka log ends before this consumer's position; reading it again from the beginning",
                metadata: ["kafka.topic": "\(id.topic)", "kafka.partition": "\(id.partition)"])
            return id
        }
    }

    /// Consumer lag per partition: messages on the broker this instance has not read yet.
    private func recordLag(positions: [PartitionID: Int64]) {
        for (id, position) in positions {
            guard position >= 0, let high = client.cachedHighWatermark(topic: id.topic, partition: id.partition) else { continue }
            Gauge(label: "sesame_kafka_consumer_lag", dimensions: [("topic", id.topic), ("partition", "\(id.partition)")])
                .record(max(0, high - position))
        }
    }
}

import Logging
import SesameKafka
import SesameTestSupport

/// Reads `count` messages from `consumer`, or fails after `timeout`.
func collect(_ count: Int, from consumer: KafkaBroadcastConsumer, timeout: Duration = .seconds(20)) async throws -> [KafkaMessage] {
    try await collect(from: consumer.messages, timeout: timeout, what: "\(count) messages") { $0.count == count }
}

/// Waits until the consumer has all its partitions.
func waitUntilAssigned(_ consumer: KafkaBroadcastConsumer) async throws {
    try await eventually("consumer assigned") { consumer.isAssigned }
}

let testLogger: Logger = {
    var logger = Logger(label: "sesame-kafka-test")
    logger.logLevel = .warning
    return logger
}()

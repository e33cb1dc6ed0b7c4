import Logging
import SesameKafka
import SesameTestSupport

/// Reads `count` messages from `consumer`, or fails after `timeout`.
func collect(_ count: Int, from consumer: KafkaBroadcastConsumer, timeout: Duration = .seconds(20)) async throws -> [KafkaMessage] {
    try await withThrowingTaskGroup(of: [KafkaMessage]?.self) { group in
        group.addTask {
            var received: [KafkaMessage] = []
            for await message in consumer.messages {
                received.append(message)
                if received.count == count { break }
            }
            return received
        }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let received = first else {
            throw TestDatabase.Unavailable(description: "timed out waiting for \(count) messages")
        }
        return received
    }
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

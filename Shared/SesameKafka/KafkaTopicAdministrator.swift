import SesameConfiguration

/// Creates the topics Sesame needs, so they exist before anyone produces or consumes.
///
/// Sesame does not rely on the broker's auto-creation: a production Kafka usually has it off, and
/// an auto-created topic gets the broker's default partition count.
public struct KafkaTopicAdministrator: Sendable {
    private let configuration: KafkaConfiguration

    /// Creates an administrator for the brokers in `configuration`.
    public init(configuration: KafkaConfiguration) {
        self.configuration = configuration
    }

    /// Creates each topic that does not exist yet with `partitions` partitions. Existing topics are
    /// left as they are.
    public func ensureTopics(_ names: [String], partitions: Int, timeout: Duration = .seconds(10)) async throws(KafkaError) {
        let properties = configuration.commonProperties.merging(configuration.extraProperties) { $1 }
        let milliseconds = timeout.inMilliseconds
        let result: Result<Void, KafkaError> = await DedicatedThread.run(name: "sesame-kafka-admin") {
            do throws(KafkaError) {
                let client = try RdKafkaClient(kind: .producer, properties: properties)
                defer { client.close() }
                try client.createTopics(names.map { ($0, partitions) }, timeoutMilliseconds: milliseconds)
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try result.get()
    }

    /// The partition count of `topic`, or nil if it does not exist.
    public func partitionCount(of topic: String, timeout: Duration = .seconds(5)) async throws(KafkaError) -> Int? {
        // A consumer's metadata request never auto-creates the topic; a producer's may.
        let properties = configuration.consumerProperties(groupID: "\(configuration.clientID)-metadata")
        let milliseconds = timeout.inMilliseconds
        let result: Result<Int?, KafkaError> = await DedicatedThread.run(name: "sesame-kafka-admin") {
            do throws(KafkaError) {
                let client = try RdKafkaClient(kind: .consumer, properties: properties)
                defer { client.close() }
                return .success(try client.partitionCount(topic: topic, timeoutMilliseconds: milliseconds))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }
}

import Logging
import PostgresNIO
import SesameEvents
import SesameTracing

/// The write side of the transactional outbox: an event is stored in the same PostgreSQL
/// transaction as the state change it describes, so either both happen or neither does.
/// `OutboxRelay` later publishes it to Kafka.
public enum Outbox {
    /// Appends `envelope` to the outbox on `connection`, which must be inside the caller's transaction.
    public static func append(_ envelope: EventEnvelope, on connection: PostgresConnection, logger: Logger) async throws {
        let payload = EventCodec.encode(envelope)
        // The writer's span, for the relay's publish span to continue (nil when not traced).
        let traceParent = SesameTracing.currentHeaders()["traceparent"]
        try await connection.query(
            """
            INSERT INTO outbox (topic, event_key, payload, trace_parent)
            VALUES (\(envelope.topic), \(envelope.partitionKey), \(ByteBuffer(bytes: payload)), \(traceParent))
            """,
            logger: logger
        )
    }
}

import SesameEvents
import SesameTracing
import Tracing

/// The consumer's side of a traced event: applying it is a span that continues the trace the
/// event's Kafka headers carry (the relay's publish span), so one upload's trace shows each
/// replica's reload. An event that travelled without a trace, or a process that does not trace,
/// applies it with no span.
public enum EventTracing {
    /// Runs `apply` for `envelope`, in a consumer span when the event carries a trace.
    public static func applying<Result>(
        _ envelope: EventEnvelope, isolation: isolated (any Actor)? = #isolation, _ apply: () async throws -> Result
    ) async throws -> Result {
        guard SesameTracing.isEnabled, envelope.traceHeaders["traceparent"] != nil else { return try await apply() }
        let span = startSpan(
            "apply \(envelope.event.type)", context: SesameTracing.context(continuing: envelope.traceHeaders), ofKind: .consumer)
        span.attributes["messaging.system"] = "kafka"
        span.attributes["messaging.destination.name"] = envelope.topic
        span.attributes["sesame.event.type"] = envelope.event.type
        defer { span.end() }
        do {
            return try await ServiceContext.$current.withValue(span.context) { try await apply() }
        } catch {
            SesameTracing.recordFailure(error, on: span)
            throw error
        }
    }
}

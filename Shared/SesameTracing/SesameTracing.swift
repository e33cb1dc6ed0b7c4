import Instrumentation
import ServiceContextModule
import Synchronization
import Tracing

/// Whether this process exports traces, and the W3C trace context (`traceparent`, `tracestate`)
/// as it crosses the places Sesame's own code carries it: PostgreSQL (the outbox row an admin
/// transaction writes) and Kafka (the event's headers).
///
/// Off unless the executable bootstrapped an exporter (`TracingBootstrap`, in SesameServer, on the
/// standard `OTEL_*` variables): every span Sesame starts is behind `isEnabled`, so a process that
/// does not trace pays one atomic load where a span would start and nothing else.
public enum SesameTracing {
    private static let enabled = Atomic<Bool>(false)

    /// Whether an exporter was bootstrapped in this process.
    public static var isEnabled: Bool { enabled.load(ordering: .relaxed) }

    /// Called once the tracer is installed (`InstrumentationSystem.bootstrap`).
    public static func markEnabled() { enabled.store(true, ordering: .relaxed) }

    /// The trace context of the current span as W3C headers; empty when tracing is off or there is
    /// no span (or the span is not sampled: the propagator writes nothing worth carrying then).
    public static func currentHeaders(_ context: ServiceContext? = .current) -> [String: String] {
        guard isEnabled, let context else { return [:] }
        var headers: [String: String] = [:]
        InstrumentationSystem.instrument.inject(context, into: &headers, using: DictionaryInjector())
        return headers
    }

    /// A context continuing the trace `headers` carry (W3C `traceparent`, `tracestate`).
    public static func context(continuing headers: [String: String]) -> ServiceContext {
        var context = ServiceContext.topLevel
        InstrumentationSystem.instrument.extract(headers, into: &context, using: DictionaryExtractor())
        return context
    }

    /// Marks `span` failed by `errorType` (`error.type`), with an error status unless the failure
    /// is the caller's (a 4xx answer). A type, never an error's message: a message may quote what a
    /// client or a peer sent.
    public static func recordFailure(_ errorType: String, on span: any Span, isError: Bool = true) {
        span.attributes["error.type"] = errorType
        if isError { span.setStatus(SpanStatus(code: .error)) }
    }

    /// Marks `span` failed by `error`'s type.
    public static func recordFailure(_ error: any Error, on span: any Span, isError: Bool = true) {
        recordFailure("\(type(of: error))", on: span, isError: isError)
    }

    /// The headers a trace is carried in, and the only ones Sesame reads back: nothing else a
    /// producer put in a header reaches the tracer.
    public static let headerNames: Set<String> = ["traceparent", "tracestate"]
}

struct DictionaryInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) {
        guard SesameTracing.headerNames.contains(key) else { return }
        carrier[key] = value
    }
}

struct DictionaryExtractor: Extractor {
    func extract(key: String, from carrier: [String: String]) -> String? {
        carrier[key]
    }
}

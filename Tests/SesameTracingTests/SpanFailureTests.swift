import InMemoryTracing
import SesameTracing
import Testing
import Tracing

/// A failed span says what failed by type and never by message: a message may quote what a client
/// or a peer sent (a config value, a token), and spans leave the process.
@Suite("A failed span")
struct SpanFailureTests {
    struct RefusedUpload: Error, CustomStringConvertible {
        var description: String { "the client sent hunter2" }
    }

    @Test("names the error's type, never its message, and is an error; a caller's failure (4xx) is not")
    func recordsTypeNotMessage() {
        let tracer = InMemoryTracer()
        let failed = tracer.startSpan("server failure", context: .topLevel)
        SesameTracing.recordFailure(RefusedUpload(), on: failed)
        #expect(failed.attributes.get("error.type") == .string("RefusedUpload"))
        #expect(failed.status?.code == .error)
        var values: [String] = []
        failed.attributes.forEach { _, value in values.append("\(value)") }
        #expect(!values.contains { $0.contains("hunter2") }, "\(values)")

        let refused = tracer.startSpan("client's failure", context: .topLevel)
        SesameTracing.recordFailure(RefusedUpload(), on: refused, isError: false)
        #expect(refused.attributes.get("error.type") == .string("RefusedUpload"))
        #expect(refused.status == nil)

        let named = tracer.startSpan("a failure by kind", context: .topLevel)
        SesameTracing.recordFailure("timedOut", on: named)
        #expect(named.attributes.get("error.type") == .string("timedOut"))
        #expect(named.status?.code == .error)
    }
}

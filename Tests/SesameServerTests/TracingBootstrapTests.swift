import Testing

@testable import SesameServer

@Suite("Tracing is off unless the OpenTelemetry variables name a collector")
struct TracingBootstrapTests {
    @Test("an OTLP endpoint turns export on; nothing, OTEL_SDK_DISABLED or OTEL_TRACES_EXPORTER=none keeps it off")
    func requested() {
        #expect(!TracingBootstrap.isRequested(by: [:]))
        #expect(!TracingBootstrap.isRequested(by: ["OTEL_TRACES_SAMPLER": "always_on", "OTEL_EXPORTER_OTLP_ENDPOINT": ""]))
        #expect(TracingBootstrap.isRequested(by: ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"]))
        #expect(TracingBootstrap.isRequested(by: ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"]))
        #expect(!TracingBootstrap.isRequested(by: ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_SDK_DISABLED": "TRUE"]))
        #expect(!TracingBootstrap.isRequested(by: ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_TRACES_EXPORTER": "none"]))
    }
}

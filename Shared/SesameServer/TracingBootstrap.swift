import Logging
import OTel
import ServiceLifecycle
import SesameTracing
import Tracing

/// Installs swift-otel's OTLP trace exporter when the standard OpenTelemetry variables ask for it.
///
/// Off by default: a service exports traces only when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) names a collector, and not when `OTEL_SDK_DISABLED=true`
/// or `OTEL_TRACES_EXPORTER=none`. The rest is swift-otel's reading of the standard variables:
/// `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG` (default `parentbased_always_on`; in
/// production `parentbased_traceidratio` with `0.01` keeps 1 %), `OTEL_EXPORTER_OTLP_PROTOCOL`
/// (`http/protobuf`, the default, or `http/json`; gRPC is not built in), `OTEL_SERVICE_NAME`,
/// `OTEL_RESOURCE_ATTRIBUTES`, headers, TLS files and the batch processor's `OTEL_BSP_*`.
/// Only traces: metrics stay Prometheus's (`/metrics`), logs stay the service's own.
public enum TracingBootstrap {
    /// The variables that turn export on.
    static let endpointVariables = ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]

    /// The exporter's service, to run beside the application's, or nil when tracing is off.
    /// - Parameters:
    ///   - serviceName: `service.name` (`OTEL_SERVICE_NAME` overrides it).
    ///   - instance: `service.instance.id`, which tells replicas apart in a trace.
    public static func start(
        serviceName: String, instance: String, environment: [String: String], logger: Logger
    ) throws -> (any Service)? {
        guard isRequested(by: environment) else { return nil }
        var configuration = OTel.Configuration.default
        configuration.serviceName = serviceName
        configuration.resourceAttributes["service.instance.id"] = instance
        configuration.diagnosticLogger = .custom(logger)
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        let (tracer, service) = try OTel.makeTracingBackend(configuration: configuration)
        InstrumentationSystem.bootstrap(tracer)
        SesameTracing.markEnabled()
        return service
    }

    /// Whether `environment` names a collector and does not turn tracing off.
    static func isRequested(by environment: [String: String]) -> Bool {
        guard endpointVariables.contains(where: { !(environment[$0] ?? "").isEmpty }) else { return false }
        if environment["OTEL_SDK_DISABLED"]?.lowercased() == "true" { return false }
        return environment["OTEL_TRACES_EXPORTER"]?.lowercased() != "none"
    }
}

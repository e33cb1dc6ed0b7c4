import Hummingbird
import Metrics
import Synchronization
import Prometheus

/// The process's Prometheus registry, installed as the swift-metrics backend exactly once.
///
/// swift-metrics allows one bootstrap per process; tests build many applications in one process,
/// so the first caller bootstraps and everyone shares the same registry.
public enum PrometheusMetrics {
    private static let state = Mutex<PrometheusCollectorRegistry?>(nil)

    /// The shared registry, bootstrapping swift-metrics with it on first use.
    public static var registry: PrometheusCollectorRegistry {
        state.withLock { registry in
            if let registry { return registry }
            let created = PrometheusCollectorRegistry()
            var factory = PrometheusMetricsFactory(registry: created)
            factory.nameAndLabelSanitizer = { name, labels in
                (sanitize(name), labels.map { (sanitize($0.0), $0.1) })
            }
            MetricsSystem.bootstrap(factory)
            registry = created
            return created
        }
    }

    /// Adds `GET /metrics`, the registry in Prometheus text format.
    public static func register<Context: RequestContext>(on router: Router<Context>) {
        let registry = self.registry
        router.get("/metrics") { _, _ in
            var buffer: [UInt8] = []
            buffer.reserveCapacity(16 * 1024)
            registry.emit(into: &buffer)
            return Response(
                status: .ok,
                headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: buffer))
            )
        }
    }

    /// The registry in Prometheus text format, as `GET /metrics` answers it.
    public static func exposition() -> String {
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }

    /// Prometheus names allow `[a-zA-Z_:][a-zA-Z0-9_:]*`; swift-metrics labels use dots.
    static func sanitize(_ name: String) -> String {
        String(name.map { $0.isLetter || $0.isNumber || $0 == "_" || $0 == ":" ? $0 : "_" })
    }
}

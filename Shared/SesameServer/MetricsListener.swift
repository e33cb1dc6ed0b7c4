import Hummingbird
import Logging
import SesameConfiguration
import SesameHTTP

/// `GET /metrics` on a port of its own (`SESAME_METRICS_PORT`): a scraper let in to that port, and
/// only to it, reaches no other route and cannot pose as the gateway (whose `X-Forwarded-For` the
/// service port believes). Anything else there is `404`; idle connections close as on the service port.
enum MetricsListener {
    static func application(configuration: ServiceConfiguration, port: Int, serverName: String, logger: Logger) -> some ApplicationProtocol {
        let router = Router()
        PrometheusMetrics.register(on: router)
        return Application(
            router: router,
            server: .http1(configuration: .init(additionalChannelHandlers: [IdleConnectionHandler(idleTimeout: .nanoseconds(configuration.idleTimeout.inNanoseconds))])),
            configuration: .init(address: .hostname(configuration.host, port: port), serverName: serverName),
            logger: logger)
    }
}

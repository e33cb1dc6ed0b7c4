import Hummingbird
import Logging
import ServiceLifecycle
import SesameConfiguration
import SesameHTTP

/// What makes one Sesame service different from another: its name, default port and routes.
///
/// Everything else — configuration, logging, PostgreSQL, migrations, health, metrics, errors — is
/// the same for every service and lives in `ServiceRuntime`.
public protocol SesameServiceDefinition: Sendable {
    /// The short name, e.g. `auth`; the executable is `sesame-<name>`.
    static var name: String { get }
    /// The port used when `SESAME_PORT` is unset.
    static var defaultPort: Int { get }
    /// Adds the service's own routes.
    static func addRoutes(to router: Router<SesameRequestContext>, dependencies: ServiceDependencies)
    /// Long-lived work of the service's own (Kafka producers, relays, consumers). They start after
    /// PostgreSQL and its migrations and stop before them, after the HTTP server.
    static func makeBackgroundServices(dependencies: ServiceDependencies) throws -> [any Service]
}

extension SesameServiceDefinition {
    /// No background work unless the service says so.
    public static func makeBackgroundServices(dependencies: ServiceDependencies) throws -> [any Service] { [] }
}

extension SesameServiceDefinition {
    /// Builds this service's application: the one builder both the executable and the tests use.
    public static func buildApplication(
        configuration: ServiceConfiguration,
        logger: Logger? = nil
    ) throws -> some ApplicationProtocol {
        try ServiceRuntime.buildApplication(Self.self, configuration: configuration, logger: logger)
    }
}

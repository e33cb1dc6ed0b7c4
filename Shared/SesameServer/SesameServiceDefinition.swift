import ArgumentParser
import Hummingbird
import Logging
import ServiceLifecycle
import SesameConfiguration
import SesameHTTP

/// What makes one Sesame service different from another: its name, default port, routes and
/// background work.
///
/// Everything else — configuration, logging, PostgreSQL, migrations, health, metrics, errors — is
/// the same for every service and lives in `ServiceRuntime`.
public protocol SesameServiceDefinition: Sendable {
    /// The short name, e.g. `auth`; the executable is `sesame-<name>`.
    static var name: String { get }
    /// The port used when `SESAME_PORT` is unset.
    static var defaultPort: Int { get }
    /// Adds the service's own routes and returns its long-lived work (Kafka producers, relays,
    /// consumers, periodic jobs), which may share state with the routes. That work starts after
    /// PostgreSQL and its migrations and stops before them, after the HTTP server.
    static func configure(_ router: Router<SesameRequestContext>, dependencies: ServiceDependencies) throws -> [any Service]
    /// Body limits of this service's paths that differ from `SESAME_MAX_BODY_BYTES`, by path prefix.
    static func bodyLimits(_ configuration: ServiceConfiguration) -> [String: Int]
    /// Operator commands of this service besides `serve`, `migrate` and `rewrap-secrets`.
    static var commands: [any ParsableCommand.Type] { get }
    /// Whether the service keeps serving from memory while PostgreSQL is down, so that readiness
    /// reports `degraded` rather than taking it out of the balancer.
    static var servesWithoutDatabase: Bool { get }
    /// Path prefixes answered from memory alone. Requests to other paths that stall while
    /// PostgreSQL is away are cut short with 503 `service_unavailable`.
    static var pathsServedFromMemory: [String] { get }
}

extension SesameServiceDefinition {
    /// None by default.
    public static func bodyLimits(_ configuration: ServiceConfiguration) -> [String: Int] { [:] }

    /// None by default.
    public static var commands: [any ParsableCommand.Type] { [] }

    /// No by default.
    public static var servesWithoutDatabase: Bool { false }

    /// None by default.
    public static var pathsServedFromMemory: [String] { [] }

    /// Builds this service's application: the one builder both the executable and the tests use.
    public static func buildApplication(
        configuration: ServiceConfiguration,
        logger: Logger? = nil
    ) throws -> some ApplicationProtocol {
        try ServiceRuntime.buildApplication(Self.self, configuration: configuration, logger: logger)
    }
}

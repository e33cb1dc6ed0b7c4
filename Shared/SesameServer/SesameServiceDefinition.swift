import ArgumentParser
import Hummingbird
import Logging
import ServiceLifecycle
import SesameConfiguration
import SesameHTTP

/// What makes one Sesame service different from another: its name, default port, and the parts
/// (routes, background work, readiness checks) it builds from its dependencies.
///
/// Everything else — configuration, logging, PostgreSQL, migrations, health, metrics, errors — is
/// the same for every service and lives in `ServiceRuntime`.
public protocol SesameServiceDefinition: Sendable {
    /// The short name, e.g. `auth`; the executable is `sesame-<name>`.
    static var name: String { get }
    /// The port used when `SESAME_PORT` is unset.
    static var defaultPort: Int { get }
    /// Builds the service from `dependencies`: its routes, its long-lived work (which may share
    /// state with the routes) and its readiness checks.
    static func parts(_ dependencies: ServiceDependencies) throws -> ServiceParts
    /// Operator commands of this service besides `serve`, `migrate` and `rewrap-secrets`.
    static var commands: [any ParsableCommand.Type] { get }
    /// Whether the service keeps serving from memory while PostgreSQL is down, so that readiness
    /// reports `degraded` rather than taking it out of the balancer.
    static var servesWithoutDatabase: Bool { get }
    /// Whether its server reads `SESAME_OPERATOR_TOKEN` (and refuses to start without it in
    /// production). Only admin's does: the other services, and every one-shot command, run without it.
    static var servesOperators: Bool { get }
    /// Its OpenAPI 3.1 document as JSON (`Services/<name>/openapi.yaml`, embedded at build
    /// time by the `EmbedFiles` plugin), served at `GET /openapi.json`. Every route it registers is in it:
    /// `OpenAPIContractTests` fails otherwise.
    static var openAPIDocument: String { get }
    /// The sets of error codes it answers: `CommonErrorCode`, its own, and any it shares. Their
    /// codes are exactly its document's `Error.code` enum (`OpenAPIContractTests`).
    static var errorCodes: [any ErrorCodes.Type] { get }
}

extension SesameServiceDefinition {
    /// None by default.
    public static var commands: [any ParsableCommand.Type] { [] }

    /// No by default.
    public static var servesWithoutDatabase: Bool { false }

    /// No by default.
    public static var servesOperators: Bool { false }

    /// Builds this service's application: the one builder both the executable and the tests use.
    public static func buildApplication(
        configuration: ServiceConfiguration,
        logger: Logger? = nil,
        observability: [any ServiceLifecycle.Service] = []
    ) throws -> some ApplicationProtocol {
        try ServiceRuntime.buildApplication(Self.self, configuration: configuration, logger: logger, observability: observability)
    }
}

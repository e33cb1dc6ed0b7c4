import Hummingbird
import ServiceLifecycle
import SesameHTTP

/// What a service is made of, as its definition builds it (`SesameServiceDefinition.parts`): its
/// routes, its long-lived work and the readiness checks of what it depends on. A value the runtime
/// assembles into an application, nothing shared to mutate.
///
/// Route groups declare where they are with what they need: a body limit other than
/// `SESAME_MAX_BODY_BYTES`, or that they are answered from memory (so the database watchdog leaves
/// them alone). Both are enforced before routing, so an oversized body or a stalled database is
/// refused whatever route a request aims at; declaring them with the group keeps them beside the
/// routes they are for.
public struct ServiceParts {
    /// The service's routes.
    public let routes = RouteCollection(context: SesameRequestContext.self)
    /// Long-lived work (Kafka producers, relays, consumers, periodic jobs). It starts after
    /// PostgreSQL and its migrations and stops before them, after the HTTP server.
    public var services: [any Service] = []
    /// What `/health/ready` asks besides PostgreSQL and the migrations.
    public var readiness: [ReadinessCheck] = []
    /// Routes answered on the event loop when their answer is in memory (`FastPathRoute`); each
    /// shadows a route of `routes`, which answers what the fast path leaves.
    public var fastPaths: [any FastPathRoute] = []
    /// The body limits the groups declared.
    public private(set) var bodyLimits: [PathPrefix: Int] = [:]
    /// The paths the groups declared as answered from memory.
    public private(set) var pathsServedFromMemory: [PathPrefix] = []

    public init() {}

    /// A group of routes under `path`.
    /// - Parameters:
    ///   - bodyLimit: the largest body, in bytes, its routes accept; nil for `SESAME_MAX_BODY_BYTES`.
    ///     A more specific group's limit wins over an enclosing one's.
    ///   - servedFromMemory: whether its routes answer without PostgreSQL, so a database outage
    ///     must not cut them short.
    public mutating func group(_ path: String, bodyLimit: Int? = nil, servedFromMemory: Bool = false) -> RouterGroup<SesameRequestContext> {
        let prefix = PathPrefix(path)
        if let bodyLimit { bodyLimits[prefix] = bodyLimit }
        if servedFromMemory { pathsServedFromMemory.append(prefix) }
        return routes.group(RouterPath(prefix.path))
    }
}

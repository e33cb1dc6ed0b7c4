import Hummingbird
import Logging
import ServiceLifecycle
import SesameConfiguration
import SesameEncryption
import SesameHTTP
import SesameKafka
import SesameStorage
import SesameTracing

/// Builds a service's application the same way for the executable and for tests.
public enum ServiceRuntime {
    /// The application for `Service`: PostgreSQL pool (a service in the group, migrated before the
    /// server listens), the shared middleware, health, metrics and OpenAPI routes, and the service's routes.
    public static func buildApplication<Service: SesameServiceDefinition>(
        _ service: Service.Type,
        configuration: ServiceConfiguration,
        logger: Logger? = nil,
        observability: [any ServiceLifecycle.Service] = []
    ) throws -> some ApplicationProtocol {
        // The Prometheus backend first: a metric made before it (the outbox relay's and the Kafka
        // producer's, made with them in `parts`) would report to nowhere for the process's life.
        _ = PrometheusMetrics.registry
        var logger = logger ?? Logger(label: "sesame-\(Service.name)")
        logger.logLevel = configuration.logLevel
        for warning in configuration.warnings {
            logger.warning("\(warning)")
        }

        let dependencies = try dependencies(Service.self, configuration: configuration, logger: logger)
        let (database, migrations) = (dependencies.database, dependencies.migrations)

        let parts = try Service.parts(dependencies)
        let requestMetrics = RequestMetrics()
        let stallWatch = DatabaseStallWatch(database: database)
        let router = router(
            Service.self, parts: parts, database: database, migrations: migrations, configuration: configuration, requestMetrics: requestMetrics,
            stallWatch: stallWatch)

        let serverName = "sesame-\(Service.name)"
        let fastPaths = parts.fastPaths
        let requestLogger = logger
        let idleTimeout = configuration.idleTimeout
        var app = Application(
            router: router,
            server: .http1(
                configuration: .init(
                    // In front of the fast path, so that it sees every request and answer: a
                    // connection that makes no progress (a head that never ends, a body that drips,
                    // an idle keep-alive) is closed, and one client cannot hold sockets for ever.
                    additionalChannelHandlers: [IdleConnectionHandler(idleTimeout: .nanoseconds(idleTimeout.inNanoseconds))]
                        + (fastPaths.isEmpty
                            ? [] : [FastPathHandler(routes: fastPaths, serverName: serverName, logger: requestLogger, metrics: requestMetrics)]))),
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: serverName),
            logger: logger
        )
        // The trace exporter first: started before, and so stopped after, what it exports.
        app.addServices(observability)
        if let metricsPort = configuration.metricsPort {
            app.addServices(MetricsListener.application(configuration: configuration, port: metricsPort, serverName: serverName, logger: logger))
        }
        app.addServices(database, migrations, stallWatch)
        app.addServices(parts.services)
        return app
    }

    /// Every route `Service` registers, as a method and a path (`GET`, `/v1/blob/{key}`): what its
    /// OpenAPI document must cover.
    /// Builds the service's parts without running them (nothing connects).
    public static func routes<Service: SesameServiceDefinition>(
        _ service: Service.Type, configuration: ServiceConfiguration
    ) throws -> [(method: String, path: String)] {
        let dependencies = try dependencies(Service.self, configuration: configuration, logger: Logger(label: "sesame-\(Service.name)"))
        let router = router(
            Service.self, parts: try Service.parts(dependencies), database: dependencies.database, migrations: dependencies.migrations,
            configuration: configuration, requestMetrics: RequestMetrics(), stallWatch: DatabaseStallWatch(database: dependencies.database))
        return router.methodsAndPaths
    }

    private static func dependencies<Service: SesameServiceDefinition>(
        _ service: Service.Type, configuration: ServiceConfiguration, logger: Logger
    ) throws -> ServiceDependencies {
        let database = Database(
            url: try DatabaseURL(configuration.databaseURL), following: configuration.databaseURLFile, poolSize: configuration.databasePoolSize,
            logger: logger)
        let keyring = try MasterKeyring(current: configuration.masterKey.current, previous: configuration.masterKey.previous)
        return ServiceDependencies(
            configuration: configuration,
            database: database,
            migrations: MigrationService(database: database, logger: logger),
            kafka: KafkaConfiguration(
                brokers: configuration.kafkaBrokers, clientID: "sesame-\(Service.name)",
                idempotentDelivery: configuration.kafkaIdempotence, extraProperties: configuration.kafkaSecurity.clientProperties),
            encryption: EnvelopeEncryption(keyring: keyring),
            logger: logger
        )
    }

    /// The shared middleware, then health, metrics, the OpenAPI document and the service's routes.
    private static func router<Service: SesameServiceDefinition>(
        _ service: Service.Type, parts: ServiceParts, database: Database, migrations: MigrationService,
        configuration: ServiceConfiguration, requestMetrics: RequestMetrics, stallWatch: DatabaseStallWatch
    ) -> Router<SesameRequestContext> {
        let router = Router(context: SesameRequestContext.self)
        let routeMethods = RouteMethods()
        // First, so the span covers every other middleware; only when this process traces.
        if SesameTracing.isEnabled { router.add(middleware: RequestTracingMiddleware()) }
        router.addMiddleware {
            RequestIDMiddleware()
            RequestMetricsMiddleware(metrics: requestMetrics)
            AccessLogMiddleware()
            ErrorRenderingMiddleware()
            MethodNotAllowedMiddleware(routes: routeMethods)
            NulCharacterMiddleware()
            DatabaseAvailabilityMiddleware(
                watch: stallWatch,
                exemptPaths: [PathPrefix("/health"), PathPrefix("/metrics"), PathPrefix("/openapi.json")] + parts.pathsServedFromMemory)
            RequestLimitsMiddleware(maxBodyBytes: configuration.maxBodyBytes, limitsByPathPrefix: parts.bodyLimits)
            AuditSealMiddleware(seal: AuditSeal(masterKey: configuration.masterKey.current, previous: configuration.masterKey.previous))
        }
        if configuration.metricsPort == nil { PrometheusMetrics.register(on: router) }
        OpenAPIRoute(document: Service.openAPIDocument).register(on: router)
        router.addRoutes(parts.routes)
        HealthRoutes(
            checks: [
                ReadinessCheck(name: "postgres", impact: Service.servesWithoutDatabase ? .degrading : .required) {
                    await database.isReachable()
                },
                ReadinessCheck(name: "migrations") { migrations.isComplete },
            ] + parts.readiness
        ).register(on: router)
        routeMethods.add(router.methodsAndPaths)
        return router
    }
}

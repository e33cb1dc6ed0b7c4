import Hummingbird
import Logging
import SesameConfiguration
import SesameEncryption
import SesameHTTP
import SesameKafka
import SesameStorage

/// Builds a service's application the same way for the executable and for tests.
public enum ServiceRuntime {
    /// The application for `Service`: PostgreSQL pool (a service in the group, migrated before the
    /// server listens), the shared middleware, health and metrics routes, and the service's routes.
    public static func buildApplication<Service: SesameServiceDefinition>(
        _ service: Service.Type,
        configuration: ServiceConfiguration,
        logger: Logger? = nil
    ) throws -> some ApplicationProtocol {
        var logger = logger ?? Logger(label: "sesame-\(Service.name)")
        logger.logLevel = configuration.logLevel
        for warning in configuration.warnings {
            logger.warning("\(warning)")
        }

        let database = Database(url: try DatabaseURL(configuration.databaseURL), logger: logger)
        let keyring = try MasterKeyring(current: configuration.masterKey.current, previous: configuration.masterKey.previous)
        let migrations = MigrationService(database: database, logger: logger)
        let dependencies = ServiceDependencies(
            configuration: configuration,
            database: database,
            migrations: migrations,
            kafka: KafkaConfiguration(
                brokers: configuration.kafkaBrokers, clientID: "sesame-\(Service.name)",
                idempotentDelivery: configuration.kafkaIdempotence, extraProperties: configuration.kafkaSecurity.clientProperties),
            encryption: EnvelopeEncryption(keyring: keyring),
            logger: logger
        )

        let parts = try Service.parts(dependencies)
        let router = Router(context: SesameRequestContext.self)
        let requestMetrics = RequestMetrics()
        router.addMiddleware {
            RequestIDMiddleware()
            RequestMetricsMiddleware(metrics: requestMetrics)
            AccessLogMiddleware()
            ErrorRenderingMiddleware()
            DatabaseAvailabilityMiddleware(
                database: database, exemptPaths: [PathPrefix("/health"), PathPrefix("/metrics")] + parts.pathsServedFromMemory)
            RequestLimitsMiddleware(maxBodyBytes: configuration.maxBodyBytes, limitsByPathPrefix: parts.bodyLimits)
        }
        PrometheusMetrics.register(on: router)
        router.addRoutes(parts.routes)
        HealthRoutes(
            checks: [
                ReadinessCheck(name: "postgres", impact: Service.servesWithoutDatabase ? .degrading : .required) {
                    await database.isReachable()
                },
                ReadinessCheck(name: "migrations") { migrations.isComplete },
            ] + parts.readiness
        ).register(on: router)

        let serverName = "sesame-\(Service.name)"
        let fastPaths = parts.fastPaths
        let requestLogger = logger
        var app = Application(
            router: router,
            server: .http1(
                configuration: .init(
                    additionalChannelHandlers: fastPaths.isEmpty
                        ? [] : [FastPathHandler(routes: fastPaths, serverName: serverName, logger: requestLogger, metrics: requestMetrics)])),
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: serverName),
            logger: logger
        )
        app.addServices(database, migrations)
        app.addServices(parts.services)
        return app
    }
}

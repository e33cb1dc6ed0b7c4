import Foundation
import Logging

/// Everything a Sesame service reads from its environment, parsed and validated in one place.
///
/// | variable | meaning | default |
/// | --- | --- | --- |
/// | `SESAME_ENVIRONMENT` | `development` or `production` | `development` |
/// | `SESAME_DATABASE_URL` | `postgres://user:password@host:port/database` | `postgres://sesame@127.0.0.1:5432/sesame` (development only) |
/// | `SESAME_DATABASE_URL_FILE` | instead of `SESAME_DATABASE_URL`: a file holding it, followed when it changes (failover) | none |
/// | `SESAME_DATABASE_POOL_SIZE` | the most connections one instance opens to PostgreSQL | `20` |
/// | `SESAME_KAFKA_BROKERS` | comma-separated `host:port` list | `127.0.0.1:9092` |
/// | `SESAME_KAFKA_IDEMPOTENCE` | `on` or `off`: Kafka idempotent delivery; off only for a broker that forgets producer ids on restart (Tansu in memory) | `on` |
/// | `SESAME_KAFKA_SECURITY_PROTOCOL`, `SESAME_KAFKA_SASL_*`, `SESAME_KAFKA_TLS_*` | SASL/SCRAM and TLS to Kafka (see `KafkaSecurity`) | plaintext |
/// | `SESAME_MASTER_KEY` | base64 of 32 bytes; wraps every key that encrypts data at rest | generated per process (development only) |
/// | `SESAME_MASTER_KEY_PREVIOUS` | comma-separated earlier master keys, still accepted for reading | none |
/// | `SESAME_HOST` | address to listen on | `127.0.0.1` |
/// | `SESAME_PORT` | port to listen on | 8081 auth, 8082 delivery, 8083 admin |
/// | `SESAME_METRICS_PORT` | a port of its own for `GET /metrics` alone (a scraper let in there reaches no other route); `/metrics` leaves `SESAME_PORT` | none: `/metrics` on `SESAME_PORT` |
/// | `SESAME_LOG_LEVEL` | `trace` … `critical` | `info` |
/// | `SESAME_LOG_FORMAT` | `json` or `text` | `json` |
/// | `SESAME_MAX_BODY_BYTES` | largest request body accepted | 1 MiB |
/// | `SESAME_APP_ATTEST_EXTRA_ROOTS` | path of a PEM file of extra App Attest roots (software attesters); refused in production | none |
/// | `SESAME_TRUSTED_PROXIES` | comma-separated addresses or CIDR ranges of the gateways whose `X-Forwarded-For` is believed | none |
/// | `SESAME_ACCESS_TOKEN_TTL` | access token lifetime (1m to 24h) | `15m` |
/// | `SESAME_REFRESH_TOKEN_TTL` | refresh token lifetime (1h to 365d, at least the access lifetime) | `30d` |
/// | `SESAME_SIGNING_KEY_ROTATION` | how long a token signing key signs before auth replaces it (1h to 365d) | `30d` |
/// | `SESAME_ATTEST_ADMISSION_RATE` | attestations admitted per second per app (Apple asks for under ~100) | `50` |
/// | `SESAME_REQUEST_RATE_PER_KEY` | delivery requests per second per attested key (burst 10×) | `20` |
/// | `SESAME_STREAMS_PER_INSTALL` | live-config streams one attested key may hold open on a delivery replica (`429 too_many_streams` beyond) | `8` |
/// | `SESAME_REQUEST_RATE_PER_CLIENT` | delivery requests per second per client address, IPv6 per /64 (burst 10×) | `200` |
/// | `SESAME_ATTEST_RATE_PER_CLIENT` | attests per second per client address (burst 5×; challenges and refreshes twice this): raise it when many devices share one address | `10` |
/// | `SESAME_OPERATOR_TOKEN` | the credential that registers apps over the management API (at least 32 characters); required in production by admin's server, read by nothing else | none: apps are registered with `sesame-admin keys create` |
/// | `SESAME_DASHBOARD_ORIGIN` | the origin the dashboard is served from (`https://sesame.example.com`): its passkeys are bound to this host | `http://localhost:8080` in development; unset in production disables passkey sign-in |
/// | `SESAME_MAX_CONFIG_BYTES` | largest config document accepted | 1 MiB |
/// | `SESAME_MAX_BLOB_BYTES` | largest blob accepted | 50 MiB |
/// | `SESAME_OUTBOUND_ALLOWED_HOSTS` | comma-separated internal hosts that calls to addresses apps configure may reach, each for one purpose, port and set of apps: `purpose=host:port@apps` (`jwks=idp.corp.internal:443@*`; see `OutboundAllowance`) | none |
/// | `SESAME_APPLE_DEVICECHECK_URL` | Apple's DeviceCheck server, which Sesame asks with each app's DeviceCheck key (another address for tests or an egress proxy; plain http only in development) | `https://api.devicecheck.apple.com` |
/// | `SESAME_IDLE_TIMEOUT` | how long a service keeps a connection that sends nothing: before its request's head is complete, between the parts of its body, and between requests (5s to 10m; the gateway's upstream keepalive is shorter) | `60s` |
/// | `SESAME_DELIVERY_RESYNC_INTERVAL` | how often delivery reloads the apps changed since its last read from PostgreSQL (5s to 1h) | `30s` |
public struct ServiceConfiguration: Sendable {
    /// Development or production.
    public var environment: DeploymentEnvironment
    /// The PostgreSQL connection URL (at start, when it comes from `databaseURLFile`).
    public var databaseURL: String
    /// A file holding the URL, which the services follow when it changes (a failover to another
    /// address); nil when the URL comes from `SESAME_DATABASE_URL`.
    public var databaseURLFile: String?
    /// The most connections this instance's pool opens to PostgreSQL.
    public var databasePoolSize: Int
    /// Kafka bootstrap servers.
    public var kafkaBrokers: [String]
    /// Whether the Kafka producer uses idempotent delivery.
    public var kafkaIdempotence: Bool
    /// Authentication and TLS to Kafka.
    public var kafkaSecurity: KafkaSecurity
    /// The master key material for envelope encryption at rest.
    public var masterKey: MasterKeyMaterial
    /// The address the HTTP server binds.
    public var host: String
    /// The port the HTTP server binds.
    public var port: Int
    /// The port that serves `GET /metrics` alone, when it is not served on `port`.
    public var metricsPort: Int?
    /// The minimum level logged.
    public var logLevel: Logger.Level
    /// JSON lines or text.
    public var logFormat: LogFormat
    /// The largest request body, in bytes, any route accepts unless it sets its own limit.
    public var maxBodyBytes: Int
    /// PEM certificates trusted as App Attest roots besides Apple's (development and tests only).
    public var appAttestExtraRootsPEM: String?
    /// The proxies whose `X-Forwarded-For` entries are believed.
    public var trustedProxies: [IPAddressRange]
    /// Token lifetimes and signing key rotation.
    public var tokenLifetimes: TokenLifetimes
    /// Attestations admitted per second per app; the burst is twice this.
    public var attestAdmissionRate: Int
    /// Delivery requests per second per attested key; the burst is ten times this.
    public var requestRatePerKey: Int
    /// Live-config streams one attested key may hold open on a delivery replica.
    public var streamsPerInstall: Int
    /// Credentials that fail (`401`) one client address may present at once on the management API,
    /// the dashboard's API and `/v1/verify/*` before it is refused `429` (then two a second).
    public var failedCredentialsPerAddress: Int
    /// Live-config streams one client address (an IPv6 client's /64) may hold open on a delivery replica.
    public var streamsPerAddress: Int
    /// Live-config streams a delivery replica holds open in all.
    public var streamsPerReplica: Int
    /// Delivery requests per second per client address; the burst is ten times this.
    public var requestRatePerClient: Int
    /// Attests per second per client address at auth; challenges and refreshes get twice this.
    public var attestRatePerClient: Int
    /// The operator credential for registering apps over the management API.
    public var operatorToken: String?
    /// Where the dashboard is served from (scheme, host and port, no path); nil when it has none.
    public var dashboardOrigin: String?
    /// The largest config document, in bytes.
    public var maxConfigBytes: Int
    /// The largest blob, in bytes.
    public var maxBlobBytes: Int
    /// How often delivery reloads everything from PostgreSQL, repairing events it missed.
    public var deliveryResyncInterval: Duration
    /// How long a connection that sends nothing is kept: an unfinished head, a stalled body, an idle
    /// keep-alive. A response being written is never cut by it.
    public var idleTimeout: Duration
    /// The internal hosts that outbound calls to addresses apps configure may reach, each for its
    /// purposes, port and apps.
    public var outboundAllowances: [OutboundAllowance]
    /// Apple's DeviceCheck server (`SESAME_APPLE_DEVICECHECK_URL`), for production builds' device tokens.
    public var appleDeviceCheckURL: String
    /// Apple's DeviceCheck server for development builds' device tokens (`SESAME_APPLE_DEVICECHECK_DEVELOPMENT_URL`).
    public var appleDeviceCheckDevelopmentURL: String
    /// Apple's App Attest data server, which trades receipts for risk metrics (`SESAME_APPLE_APP_ATTEST_DATA_URL`).
    public var appleAppAttestDataURL: String
    /// The same for keys attested in the development environment (`SESAME_APPLE_APP_ATTEST_DATA_DEVELOPMENT_URL`).
    public var appleAppAttestDataDevelopmentURL: String
    /// How often auth looks for receipts due to be redeemed with Apple.
    public var receiptRedemptionInterval: Duration
    /// How often auth adds its attestation counts to the database, moves automatic attestation ramps
    /// and reads where they stand (`SESAME_ATTESTATION_ROUND_INTERVAL`).
    public var attestationRoundInterval: Duration
    /// Apple's own App Attest data servers, the defaults.
    public static let defaultAppleAppAttestDataURL = "https://data.appattest.apple.com"
    public static let defaultAppleAppAttestDataDevelopmentURL = "https://data-development.appattest.apple.com"
    /// Apple's own DeviceCheck server, the default.
    public static let defaultAppleDeviceCheckURL = "https://api.devicecheck.apple.com"
    /// Apple's own DeviceCheck server for development builds, the default.
    public static let defaultAppleDeviceCheckDevelopmentURL = "https://api.development.devicecheck.apple.com"
    /// Problems that did not stop the start but an operator should see (logged once logging is up).
    public var warnings: [String]

    /// The development database URL, matching what `./sesame-dev up` starts.
    public static let developmentDatabaseURL = "postgres://sesame@127.0.0.1:5432/sesame"
    /// Connections per instance unless `SESAME_DATABASE_POOL_SIZE` says otherwise (PostgresNIO's own default).
    public static let defaultDatabasePoolSize = 20

    /// Creates a configuration from explicit values (tests use this; services use `init(environment:defaultPort:)`).
    public init(
        environment: DeploymentEnvironment = .development,
        databaseURL: String = ServiceConfiguration.developmentDatabaseURL,
        databaseURLFile: String? = nil,
        databasePoolSize: Int = ServiceConfiguration.defaultDatabasePoolSize,
        kafkaBrokers: [String] = ["127.0.0.1:9092"],
        kafkaIdempotence: Bool = true,
        kafkaSecurity: KafkaSecurity = .plaintext,
        masterKey: MasterKeyMaterial,
        host: String = "127.0.0.1",
        port: Int,
        metricsPort: Int? = nil,
        logLevel: Logger.Level = .info,
        logFormat: LogFormat = .json,
        maxBodyBytes: Int = 1 << 20,
        appAttestExtraRootsPEM: String? = nil,
        trustedProxies: [IPAddressRange] = [],
        tokenLifetimes: TokenLifetimes = TokenLifetimes(),
        attestAdmissionRate: Int = 50,
        requestRatePerKey: Int = 20,
        streamsPerInstall: Int = 8,
        streamsPerAddress: Int = 256,
        failedCredentialsPerAddress: Int = 100,
        streamsPerReplica: Int = 20_000,
        requestRatePerClient: Int = 200,
        attestRatePerClient: Int = 10,
        operatorToken: String? = nil,
        dashboardOrigin: String? = "http://localhost:8080",
        maxConfigBytes: Int = 1 << 20,
        maxBlobBytes: Int = 50 << 20,
        deliveryResyncInterval: Duration = .seconds(30),
        idleTimeout: Duration = .seconds(60),
        outboundAllowances: [OutboundAllowance] = [],
        appleDeviceCheckURL: String = ServiceConfiguration.defaultAppleDeviceCheckURL,
        appleDeviceCheckDevelopmentURL: String = ServiceConfiguration.defaultAppleDeviceCheckDevelopmentURL,
        appleAppAttestDataURL: String = ServiceConfiguration.defaultAppleAppAttestDataURL,
        appleAppAttestDataDevelopmentURL: String = ServiceConfiguration.defaultAppleAppAttestDataDevelopmentURL,
        receiptRedemptionInterval: Duration = .seconds(10),
        attestationRoundInterval: Duration = .seconds(10),
        warnings: [String] = []
    ) {
        self.environment = environment
        self.databaseURL = databaseURL
        self.databaseURLFile = databaseURLFile
        self.databasePoolSize = databasePoolSize
        self.kafkaBrokers = kafkaBrokers
        self.kafkaIdempotence = kafkaIdempotence
        self.kafkaSecurity = kafkaSecurity
        self.masterKey = masterKey
        self.host = host
        self.port = port
        self.metricsPort = metricsPort
        self.logLevel = logLevel
        self.logFormat = logFormat
        self.maxBodyBytes = maxBodyBytes
        self.appAttestExtraRootsPEM = appAttestExtraRootsPEM
        self.trustedProxies = trustedProxies
        self.tokenLifetimes = tokenLifetimes
        self.attestAdmissionRate = attestAdmissionRate
        self.requestRatePerKey = requestRatePerKey
        self.streamsPerInstall = streamsPerInstall
        self.streamsPerAddress = streamsPerAddress
        self.failedCredentialsPerAddress = failedCredentialsPerAddress
        self.streamsPerReplica = streamsPerReplica
        self.requestRatePerClient = requestRatePerClient
        self.attestRatePerClient = attestRatePerClient
        self.operatorToken = operatorToken
        self.dashboardOrigin = dashboardOrigin
        self.maxConfigBytes = maxConfigBytes
        self.maxBlobBytes = maxBlobBytes
        self.deliveryResyncInterval = deliveryResyncInterval
        self.idleTimeout = idleTimeout
        self.outboundAllowances = outboundAllowances
        self.appleDeviceCheckURL = appleDeviceCheckURL
        self.appleDeviceCheckDevelopmentURL = appleDeviceCheckDevelopmentURL
        self.appleAppAttestDataURL = appleAppAttestDataURL
        self.appleAppAttestDataDevelopmentURL = appleAppAttestDataDevelopmentURL
        self.receiptRedemptionInterval = receiptRedemptionInterval
        self.attestationRoundInterval = attestationRoundInterval
        self.warnings = warnings
    }

    /// Reads and validates the configuration from `variables` (normally the process environment).
    ///
    /// In production a missing or malformed secret throws; in development safe defaults are used
    /// and a warning is recorded for each one.
    /// - Parameter requiresOperatorToken: whether production refuses to start without
    ///   `SESAME_OPERATOR_TOKEN`: only admin's server reads it, so only it asks for it, and only it
    ///   need be given the break-glass credential.
    public init(environment variables: [String: String], defaultPort: Int, requiresOperatorToken: Bool = false) throws(ConfigurationError) {
        let reader = EnvironmentReader(variables)
        let mode = try reader.value("SESAME_ENVIRONMENT", default: DeploymentEnvironment.development)
        var warnings: [String] = []

        let databaseURL: String
        let databaseURLFile = reader.string("SESAME_DATABASE_URL_FILE")
        if let databaseURLFile {
            guard reader.string("SESAME_DATABASE_URL") == nil else {
                throw ConfigurationError(variable: "SESAME_DATABASE_URL_FILE", expectation: "set instead of SESAME_DATABASE_URL, not beside it")
            }
            guard let text = try? String(contentsOfFile: databaseURLFile, encoding: .utf8),
                !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty
            else {
                throw ConfigurationError(variable: "SESAME_DATABASE_URL_FILE", expectation: "a readable file holding postgres://user:password@host:port/database")
            }
            databaseURL = text.trimmingCharacters(in: .whitespacesAndNewlines)
        } else if let url = reader.string("SESAME_DATABASE_URL") {
            databaseURL = url
        } else if mode == .production {
            throw ConfigurationError(
                variable: "SESAME_DATABASE_URL",
                expectation: "required in production (or SESAME_DATABASE_URL_FILE): postgres://user:password@host:port/database"
            )
        } else {
            databaseURL = Self.developmentDatabaseURL
        }

        let masterKey: MasterKeyMaterial
        if let encoded = reader.string("SESAME_MASTER_KEY") {
            let current = try MasterKeyMaterial.decodeKey(encoded, variable: "SESAME_MASTER_KEY")
            var previous: [[UInt8]] = []
            for item in (reader.string("SESAME_MASTER_KEY_PREVIOUS") ?? "").split(separator: ",") {
                previous.append(try MasterKeyMaterial.decodeKey(String(item), variable: "SESAME_MASTER_KEY_PREVIOUS"))
            }
            masterKey = MasterKeyMaterial(current: current, previous: previous)
        } else if mode == .production {
            throw ConfigurationError(
                variable: "SESAME_MASTER_KEY",
                expectation: "required in production: base64 of exactly 32 random bytes (generate one with: openssl rand -base64 32)"
            )
        } else {
            masterKey = MasterKeyMaterial(current: MasterKeyMaterial.generate(), isEphemeral: true)
            warnings.append(
                "SESAME_MASTER_KEY is not set: generated a key for this process only; data it encrypts will be unreadable after a restart"
            )
        }

        let brokers = (reader.string("SESAME_KAFKA_BROKERS") ?? "127.0.0.1:9092")
            .split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard !brokers.isEmpty else {
            throw ConfigurationError(variable: "SESAME_KAFKA_BROKERS", expectation: "a comma-separated list of host:port")
        }

        let levelName = reader.string("SESAME_LOG_LEVEL") ?? "info"
        guard let level = Logger.Level(rawValue: levelName.lowercased()) else {
            let allowed = Logger.Level.allCases.map(\.rawValue).joined(separator: " | ")
            throw ConfigurationError(variable: "SESAME_LOG_LEVEL", expectation: "one of \(allowed), got \"\(levelName)\"")
        }

        var extraRootsPEM: String?
        if let path = reader.string("SESAME_APP_ATTEST_EXTRA_ROOTS") {
            guard mode == .development else {
                throw ConfigurationError(
                    variable: "SESAME_APP_ATTEST_EXTRA_ROOTS",
                    expectation: "unset in production: only Apple's App Attest root is trusted there")
            }
            guard let pem = try? String(contentsOfFile: path, encoding: .utf8), pem.contains("-----BEGIN CERTIFICATE-----") else {
                throw ConfigurationError(variable: "SESAME_APP_ATTEST_EXTRA_ROOTS", expectation: "the path of a readable PEM certificate file")
            }
            extraRootsPEM = pem
            warnings.append("SESAME_APP_ATTEST_EXTRA_ROOTS is set: attestations from a software attester are accepted (development only)")
        }

        let port = try reader.port("SESAME_PORT", default: defaultPort)
        let metricsPort = try reader.port("SESAME_METRICS_PORT")
        if metricsPort == port {
            throw ConfigurationError(variable: "SESAME_METRICS_PORT", expectation: "a port other than SESAME_PORT (\(port))")
        }
        var trustedProxies: [IPAddressRange] = []
        for item in (reader.string("SESAME_TRUSTED_PROXIES") ?? "").split(separator: ",") {
            let text = item.trimmingCharacters(in: .whitespaces)
            guard let range = IPAddressRange(text) else {
                throw ConfigurationError(
                    variable: "SESAME_TRUSTED_PROXIES", expectation: "comma-separated IP addresses or CIDR ranges, got \"\(text)\"")
            }
            trustedProxies.append(range)
        }

        let operatorToken = reader.string("SESAME_OPERATOR_TOKEN")
        if let operatorToken, operatorToken.utf8.count < 32 {
            throw ConfigurationError(
                variable: "SESAME_OPERATOR_TOKEN", expectation: "at least 32 characters (generate one with: openssl rand -base64 32)")
        }
        if operatorToken == nil, mode == .production, requiresOperatorToken {
            throw ConfigurationError(
                variable: "SESAME_OPERATOR_TOKEN",
                expectation: "required in production: at least 32 characters (generate one with: openssl rand -base64 32)")
        }

        // Set but empty (compose's default) reads as unset.
        let configuredOrigin = reader.string("SESAME_DASHBOARD_ORIGIN").flatMap { $0.isEmpty ? nil : $0 }
        let dashboardOrigin = configuredOrigin ?? (mode == .development ? "http://localhost:8080" : nil)
        if let dashboardOrigin {
            guard let url = Self.serverURL(dashboardOrigin, mode: mode), url.path.isEmpty || url.path == "/" else {
                throw ConfigurationError(
                    variable: "SESAME_DASHBOARD_ORIGIN",
                    expectation: "an origin such as https://sesame.example.com (http only in development), got \"\(dashboardOrigin)\"")
            }
        }

        let appleDeviceCheckURL = try Self.appleServerURL(
            reader, "SESAME_APPLE_DEVICECHECK_URL", default: Self.defaultAppleDeviceCheckURL, mode: mode)
        let appleDeviceCheckDevelopmentURL = try Self.appleServerURL(
            reader, "SESAME_APPLE_DEVICECHECK_DEVELOPMENT_URL", default: Self.defaultAppleDeviceCheckDevelopmentURL, mode: mode)
        let appleAppAttestDataURL = try Self.appleServerURL(
            reader, "SESAME_APPLE_APP_ATTEST_DATA_URL", default: Self.defaultAppleAppAttestDataURL, mode: mode)
        let appleAppAttestDataDevelopmentURL = try Self.appleServerURL(
            reader, "SESAME_APPLE_APP_ATTEST_DATA_DEVELOPMENT_URL", default: Self.defaultAppleAppAttestDataDevelopmentURL, mode: mode)

        let kafkaSecurity = try KafkaSecurity(reader)
        if mode == .production, kafkaSecurity.securityProtocol == .plaintext {
            warnings.append(
                "SESAME_KAFKA_SECURITY_PROTOCOL is plaintext: anyone on the brokers' network can read and write Sesame's events; use sasl_ssl (or sasl_plaintext on a private network)")
        }

        let day = Duration.seconds(86400)
        let access = try reader.duration("SESAME_ACCESS_TOKEN_TTL", default: .seconds(900), within: .seconds(60)...day)
        let refresh = try reader.duration("SESAME_REFRESH_TOKEN_TTL", default: day * 30, within: max(access, .seconds(3600))...day * 365)
        let rotation = try reader.duration("SESAME_SIGNING_KEY_ROTATION", default: day * 30, within: .seconds(3600)...day * 365)

        self.init(
            environment: mode,
            databaseURL: databaseURL,
            databaseURLFile: databaseURLFile,
            databasePoolSize: try reader.positiveInteger("SESAME_DATABASE_POOL_SIZE", default: Self.defaultDatabasePoolSize),
            kafkaBrokers: brokers,
            kafkaIdempotence: try reader.flag("SESAME_KAFKA_IDEMPOTENCE", default: true),
            kafkaSecurity: kafkaSecurity,
            masterKey: masterKey,
            host: reader.string("SESAME_HOST") ?? "127.0.0.1",
            port: port,
            metricsPort: metricsPort,
            logLevel: level,
            logFormat: try reader.value("SESAME_LOG_FORMAT", default: LogFormat.json),
            maxBodyBytes: try reader.positiveInteger("SESAME_MAX_BODY_BYTES", default: 1 << 20),
            appAttestExtraRootsPEM: extraRootsPEM,
            trustedProxies: trustedProxies,
            tokenLifetimes: TokenLifetimes(access: access, refresh: refresh, signingKeyRotation: rotation),
            attestAdmissionRate: try reader.positiveInteger("SESAME_ATTEST_ADMISSION_RATE", default: 50),
            requestRatePerKey: try reader.positiveInteger("SESAME_REQUEST_RATE_PER_KEY", default: 20),
            streamsPerInstall: try reader.positiveInteger("SESAME_STREAMS_PER_INSTALL", default: 8),
            streamsPerAddress: try reader.positiveInteger("SESAME_STREAMS_PER_ADDRESS", default: 256),
            failedCredentialsPerAddress: try reader.positiveInteger("SESAME_FAILED_CREDENTIALS_PER_ADDRESS", default: 100),
            streamsPerReplica: try reader.positiveInteger("SESAME_STREAMS_PER_REPLICA", default: 20_000),
            requestRatePerClient: try reader.positiveInteger("SESAME_REQUEST_RATE_PER_CLIENT", default: 200),
            attestRatePerClient: try reader.positiveInteger("SESAME_ATTEST_RATE_PER_CLIENT", default: 10),
            operatorToken: operatorToken,
            dashboardOrigin: dashboardOrigin.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 },
            maxConfigBytes: try reader.positiveInteger("SESAME_MAX_CONFIG_BYTES", default: 1 << 20),
            maxBlobBytes: try reader.positiveInteger("SESAME_MAX_BLOB_BYTES", default: 50 << 20),
            deliveryResyncInterval: try reader.duration(
                "SESAME_DELIVERY_RESYNC_INTERVAL", default: .seconds(30), within: .seconds(5)...day / 24),
            idleTimeout: try reader.duration("SESAME_IDLE_TIMEOUT", default: .seconds(60), within: .seconds(5)...Duration.seconds(600)),
            outboundAllowances: try OutboundAllowance.parseList(reader.string("SESAME_OUTBOUND_ALLOWED_HOSTS") ?? ""),
            appleDeviceCheckURL: appleDeviceCheckURL,
            appleDeviceCheckDevelopmentURL: appleDeviceCheckDevelopmentURL,
            appleAppAttestDataURL: appleAppAttestDataURL,
            appleAppAttestDataDevelopmentURL: appleAppAttestDataDevelopmentURL,
            receiptRedemptionInterval: try reader.duration(
                "SESAME_RECEIPT_REDEMPTION_INTERVAL", default: .seconds(10), within: .seconds(1)...day / 24),
            attestationRoundInterval: try reader.duration(
                "SESAME_ATTESTATION_ROUND_INTERVAL", default: .seconds(10), within: .seconds(1)...day / 24),
            warnings: warnings
        )
    }
}

extension ServiceConfiguration {
    /// `text` as the address of a server Sesame serves from or calls: an absolute URL with a host and
    /// no query, https (http only in development); nil otherwise.
    static func serverURL(_ text: String, mode: DeploymentEnvironment) -> URLComponents? {
        guard let url = URLComponents(string: text), let host = url.host, !host.isEmpty, url.query == nil,
            url.scheme == "https" || (url.scheme == "http" && mode == .development)
        else { return nil }
        return url
    }

    /// The Apple server URL in `variable`, or `defaultURL` when unset or empty.
    static func appleServerURL(
        _ reader: EnvironmentReader, _ variable: String, default defaultURL: String, mode: DeploymentEnvironment
    ) throws(ConfigurationError) -> String {
        let url = reader.string(variable).flatMap { $0.isEmpty ? nil : $0 } ?? defaultURL
        guard serverURL(url, mode: mode) != nil else {
            throw ConfigurationError(
                variable: variable,
                expectation: "Apple's server or a stand-in, such as \(defaultURL) (http only in development), got \"\(url)\"")
        }
        return url
    }
}

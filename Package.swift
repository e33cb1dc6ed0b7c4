// swift-tools-version:6.1
import PackageDescription

/// The map: shared libraries in `Shared/`, one concern each; services in `Services/<name>/` (a
/// library with the service's parts, and a thin executable); clients in `Clients/`; tests in
/// `Tests/`; benchmarks in `Benchmarks/`, built only when `SESAME_BENCHMARKS` is set (as
/// `./sesame-dev bench` does), so `swift build` builds what ships.
///
/// An app adds this repository's URL and gets the client SDK's products (`SesameKit`,
/// `SesameKitTesting`, `SesamePinning`, `SesameVault`, in `Clients/SesameKit`): SwiftPM reads only
/// this root manifest for a package fetched by URL, and resolves only what the products an app
/// uses depend on (swift-crypto, and swift-certificates for `SesameKitTesting`), so none of the
/// server's packages are fetched or built for an app. The platforms (`sdkPlatforms`, below) are
/// the SDK's contract.

// MARK: Products of the packages Sesame depends on, named once

let argumentParser: Target.Dependency = .product(name: "ArgumentParser", package: "swift-argument-parser")
let asn1: Target.Dependency = .product(name: "SwiftASN1", package: "swift-asn1")
let asyncAlgorithms: Target.Dependency = .product(name: "AsyncAlgorithms", package: "swift-async-algorithms")
let asyncHTTPClient: Target.Dependency = .product(name: "AsyncHTTPClient", package: "async-http-client")
let crypto: Target.Dependency = .product(name: "Crypto", package: "swift-crypto")
let cryptoExtras: Target.Dependency = .product(name: "CryptoExtras", package: "swift-crypto")
let extrasBase64: Target.Dependency = .product(name: "ExtrasBase64", package: "swift-extras-base64")
let httpTypes: Target.Dependency = .product(name: "HTTPTypes", package: "swift-http-types")
let hummingbird: Target.Dependency = .product(name: "Hummingbird", package: "hummingbird")
let hummingbirdCore: Target.Dependency = .product(name: "HummingbirdCore", package: "hummingbird")
let hummingbirdTesting: Target.Dependency = .product(name: "HummingbirdTesting", package: "hummingbird")
let jwtKit: Target.Dependency = .product(name: "JWTKit", package: "jwt-kit")
let logging: Target.Dependency = .product(name: "Logging", package: "swift-log")
let metrics: Target.Dependency = .product(name: "Metrics", package: "swift-metrics")
let openAPIRuntime: Target.Dependency = .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime")
let openAPIURLSession: Target.Dependency = .product(name: "OpenAPIURLSession", package: "swift-openapi-urlsession")
let nioCore: Target.Dependency = .product(name: "NIOCore", package: "swift-nio")
let nioPosix: Target.Dependency = .product(name: "NIOPosix", package: "swift-nio")
let nioHTTP1: Target.Dependency = .product(name: "NIOHTTP1", package: "swift-nio")
let nioFoundationCompat: Target.Dependency = .product(name: "NIOFoundationCompat", package: "swift-nio")
let nioHTTPTypes: Target.Dependency = .product(name: "NIOHTTPTypes", package: "swift-nio-extras")
let postgresNIO: Target.Dependency = .product(name: "PostgresNIO", package: "postgres-nio")
let prometheus: Target.Dependency = .product(name: "Prometheus", package: "swift-prometheus")
let serviceLifecycle: Target.Dependency = .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
let tracing: Target.Dependency = .product(name: "Tracing", package: "swift-distributed-tracing")
let otel: Target.Dependency = .product(name: "OTel", package: "swift-otel")
let x509: Target.Dependency = .product(name: "X509", package: "swift-certificates")
/// The zero-knowledge envelope and the pin registry live in the client SDK's targets, so there is
/// one implementation for apps and the server.
let sesameVault: Target.Dependency = "SesameVault"
let sesamePinning: Target.Dependency = "SesamePinning"
let sesameKit: Target.Dependency = "SesameKit"
let sesameKitTesting: Target.Dependency = "SesameKitTesting"

/// Whether this manifest declares the server: only when it is the package being built, not when an
/// app fetched it by URL. SwiftPM resolves every dependency a manifest declares, used or not, so an
/// app would otherwise fetch and pin thirty server packages and could meet version conflicts over
/// packages it never builds. A fetched package's manifest is read first from the repository (where
/// SwiftPM and Xcode give it the directory `/`), then from its working copy under `checkouts/`.
/// `SESAME_PACKAGE=sdk` or `=all` overrides the guess.
let declaresServer: Bool = switch Context.environment["SESAME_PACKAGE"] {
case "sdk": false
case "all": true
default: Context.packageDirectory != "/" && !Context.packageDirectory.contains("/checkouts/")
}

/// The lowest platforms the SDK's code needs, as `Tests/Availability` measures them (it reads this
/// line): iOS 16 (App Attest needs 14; `Duration` and `Clock` 16) and macOS 13. The server's own
/// code, built for macOS by developers, needs macOS 15 (`Synchronization`): declared only with it.
let sdkPlatforms: [SupportedPlatform] = [.iOS(.v16), .macOS(.v13)]
let serverPlatforms: [SupportedPlatform] = [.iOS(.v16), .macOS(.v15)]

let package = Package(
    name: "Sesame",
    platforms: declaresServer ? serverPlatforms : sdkPlatforms,
    products: [
        // The client SDK, for apps.
        .library(name: "SesameKit", targets: ["SesameKit"]),
        .library(name: "SesameKitTesting", targets: ["SesameKitTesting"]),
        .library(name: "SesamePinning", targets: ["SesamePinning"]),
        .library(name: "SesameVault", targets: ["SesameVault"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.0"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.0"),
    ],
    targets: [
        // MARK: The client SDK (Foundation and swift-crypto only; Apple-only files behind #if canImport)

        .target(name: "SesameVault", dependencies: [crypto, cryptoExtras], path: "Clients/SesameKit/Sources/SesameVault"),
        // Sesame's one JSON value type and its RFC 8785 writer, shared by the SDK and the server (no dependencies at all).
        .target(name: "SesameJSON", path: "Clients/SesameKit/Sources/SesameJSON"),
        .target(name: "SesamePinning", dependencies: ["SesameJSON", crypto, cryptoExtras], path: "Clients/SesameKit/Sources/SesamePinning"),
        // The scope rules delivery and SesameKit share.
        .target(name: "SesameScope", dependencies: ["SesameJSON"], path: "Clients/SesameKit/Sources/SesameScope"),
        // What a relay call's proof vouches for, written by SesameKit and checked by delivery.
        .target(name: "SesameRelayProof", dependencies: [crypto], path: "Clients/SesameKit/Sources/SesameRelayProof"),
        .target(
            name: "SesameKit", dependencies: ["SesameJSON", "SesameVault", "SesamePinning", "SesameScope", "SesameRelayProof", crypto], path: "Clients/SesameKit/Sources/SesameKit",
            resources: [.copy("PrivacyInfo.xcprivacy")]),
        .target(name: "SesameKitTesting", dependencies: ["SesameKit", crypto, x509, asn1], path: "Clients/SesameKit/Sources/SesameKitTesting"),
        .testTarget(
            name: "SesameKitTests", dependencies: ["SesameKit", "SesameKitTesting", "SesameVault", "SesamePinning", "SesameRelayProof", cryptoExtras],
            path: "Clients/SesameKit/Tests/SesameKitTests"),
        .testTarget(name: "SesameScopeTests", dependencies: ["SesameScope", "SesameJSON"], path: "Clients/SesameKit/Tests/SesameScopeTests"),
        .testTarget(
            name: "SesameVaultTests", dependencies: ["SesameVault"], path: "Clients/SesameKit/Tests/SesameVaultTests",
            resources: [.copy("Vectors")]),
        .testTarget(
            name: "SesamePinningTests", dependencies: ["SesamePinning", x509, asn1, crypto], path: "Clients/SesameKit/Tests/SesamePinningTests"),
        .testTarget(
            name: "SesameJSONTests", dependencies: ["SesameJSON"], path: "Clients/SesameKit/Tests/SesameJSONTests", resources: [.copy("Vectors")]),
    ]
)

// MARK: The server, its tools and their tests

if declaresServer {
    package.products += [
        .executable(name: "sesame-auth", targets: ["sesame-auth"]),
        .executable(name: "sesame-delivery", targets: ["sesame-delivery"]),
        .executable(name: "sesame-admin", targets: ["sesame-admin"]),
        .executable(name: "sesame", targets: ["sesame"]),
        .executable(name: "sesame-device", targets: ["sesame-device"]),
    ]
    package.dependencies += [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.20.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.0"),
        // OTLP over HTTP only: the gRPC exporter's packages would add minutes to every build.
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.0.0"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.7.0"),
        .package(url: "https://github.com/swift-extras/swift-extras-base64.git", from: "1.2.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.30.0"),
        .package(url: "https://github.com/apple/swift-async-algorithms.git", from: "1.0.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.34.1"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.0.0"),
        .package(url: "https://github.com/apple/swift-openapi-generator.git", from: "1.14.3"),
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", from: "1.13.4"),
        .package(url: "https://github.com/apple/swift-openapi-urlsession.git", from: "1.4.0"),
    ]
    package.targets += [
        // MARK: Build tools

        // Embeds each service's openapi.yaml and the dashboard's assets at build time.
        .plugin(name: "EmbedFiles", capability: .buildTool(), dependencies: ["EmbedFilesTool"], path: "Plugins/EmbedFiles"),
        .executableTarget(
            name: "EmbedFilesTool", dependencies: [.product(name: "Yams", package: "Yams")], path: "Plugins/EmbedFilesTool"),

        // MARK: Shared libraries

        .target(name: "CBOR", path: "Shared/CBOR"),
        .target(name: "AppAttest", dependencies: ["CBOR", "SesameDomain", crypto, x509, asn1], path: "Shared/AppAttest"),
        .target(name: "SesameConfiguration", dependencies: [logging], path: "Shared/SesameConfiguration"),
        .target(name: "SesameLogging", dependencies: [logging], path: "Shared/SesameLogging"),
        .target(name: "SesameEncryption", dependencies: ["SesameDomain", crypto], path: "Shared/SesameEncryption"),
        .target(
            name: "SesameStorage",
            dependencies: ["SesameConfiguration", "SesameDomain", "SesameJSON", "SesameTracing", postgresNIO, logging, crypto, serviceLifecycle, tracing],
            path: "Shared/SesameStorage"
        ),
        .systemLibrary(
            name: "CRdKafka",
            path: "Shared/CRdKafka",
            pkgConfig: "rdkafka",
            providers: [.apt(["librdkafka-dev"])]
        ),
        .target(
            name: "SesameKafka",
            dependencies: ["SesameConfiguration", "CRdKafka", logging, metrics, serviceLifecycle],
            path: "Shared/SesameKafka"
        ),
        .target(name: "SesameEvents", path: "Shared/SesameEvents"),
        // Spans and W3C trace context across HTTP, PostgreSQL and Kafka (the API only; the
        // services' executables bootstrap the OTLP exporter, in SesameServer).
        .target(name: "SesameTracing", dependencies: [tracing], path: "Shared/SesameTracing"),
        .target(
            name: "SesameEventBus",
            dependencies: [
                "SesameConfiguration", "SesameEvents", "SesameKafka", "SesameStorage", "SesameTracing", postgresNIO, logging, metrics,
                serviceLifecycle, tracing,
            ],
            path: "Shared/SesameEventBus"
        ),
        .target(name: "SesameDomain", dependencies: ["SesameJSON", "SesameRelayProof", crypto, extrasBase64], path: "Shared/SesameDomain"),
        // JSON Schema (draft 2020-12), the subset config validation needs: admin checks uploads, the CLI checks offline.
        .target(name: "ConfigSchema", dependencies: ["SesameDomain", "SesameJSON"], path: "Shared/ConfigSchema"),
        .target(name: "WebAuthn", dependencies: ["AppAttest", "CBOR", "SesameDomain", crypto], path: "Shared/WebAuthn"),
        .target(
            name: "SesameTokens",
            dependencies: [
                "SesameConfiguration", "SesameDomain", "SesameEncryption", "SesameEventBus", "SesameEvents", "SesameStorage",
                jwtKit, crypto, postgresNIO, logging,
            ],
            path: "Shared/SesameTokens"
        ),
        .target(
            name: "SesameHTTP",
            dependencies: [
                "SesameConfiguration", "SesameDomain", "SesameTracing", hummingbird, httpTypes, metrics, prometheus, logging, nioCore, nioHTTPTypes,
                tracing,
            ],
            path: "Shared/SesameHTTP"
        ),
        // An App Attest assertion checked against its stored key: auth's refresh and backend checks, delivery's relays.
        .target(
            name: "SesameAssertions", dependencies: ["AppAttest", "SesameStorage", crypto, logging, postgresNIO], path: "Shared/SesameAssertions"),
        .target(
            name: "SesameOutbound",
            dependencies: ["SesameConfiguration", asyncHTTPClient, nioCore, nioHTTP1, nioPosix],
            path: "Shared/SesameOutbound"
        ),
        .target(
            name: "SesameApple",
            dependencies: [
                "SesameOutbound", "SesameConfiguration", "SesameStorage", "SesameEncryption", crypto, jwtKit, nioCore, postgresNIO, logging,
            ],
            path: "Shared/SesameApple"
        ),
        .target(
            name: "SesameServer",
            dependencies: [
                "SesameConfiguration", "SesameLogging", "SesameHTTP", "SesameStorage", "SesameEncryption", "SesameKafka",
                hummingbird, serviceLifecycle, argumentParser, nioPosix, otel, tracing,
            ],
            path: "Shared/SesameServer"
        ),

        // MARK: Services

        .target(
            name: "AuthService",
            dependencies: [
                "SesameServer", "SesameTokens", "SesameDomain", "SesameJSON", "AppAttest", "SesameAssertions", "SesameHTTP", "SesameStorage",
                "SesameConfiguration", "SesameApple", "SesameEventBus", "SesameEvents", "SesameKafka", argumentParser, crypto, postgresNIO, serviceLifecycle, x509,
                asn1, httpTypes, metrics, openAPIRuntime,
            ],
            path: "Services/auth/AuthService",
            // EmbedFiles embeds the document; OpenAPIGenerator writes its message types (`openapi.yaml` is a link to it).
            plugins: ["EmbedFiles", .plugin(name: "OpenAPIGenerator", package: "swift-openapi-generator")]
        ),
        .executableTarget(name: "sesame-auth", dependencies: ["AuthService", "SesameServer"], path: "Services/auth/sesame-auth"),
        .target(
            name: "DeliveryService",
            dependencies: [
                "SesameServer", "SesameDomain", "SesameEncryption", "SesameEventBus", "SesameEvents", "SesameHTTP", "SesameKafka",
                "SesameStorage", "SesameTokens", "SesameConfiguration", "SesameOutbound", "SesameScope", "SesameJSON", "SesameAssertions", "SesameRelayProof", "AppAttest",
                sesamePinning, crypto, cryptoExtras, postgresNIO,
                httpTypes, serviceLifecycle, metrics, hummingbirdCore, openAPIRuntime, asyncHTTPClient, asyncAlgorithms, nioCore, nioHTTP1,
            ],
            path: "Services/delivery/DeliveryService",
            // EmbedFiles embeds the document; OpenAPIGenerator writes the one message delivery encodes
            // with Codable (`openapi.yaml` is a link to it). The config answer is written by hand, fast.
            plugins: ["EmbedFiles", .plugin(name: "OpenAPIGenerator", package: "swift-openapi-generator")]
        ),
        .executableTarget(
            name: "sesame-delivery", dependencies: ["DeliveryService", "SesameServer"], path: "Services/delivery/sesame-delivery"),
        .target(
            name: "AdminService",
            dependencies: [
                "SesameServer", "SesameConfiguration", "SesameEventBus", "SesameEvents", "SesameKafka", "SesameDomain", "ConfigSchema",
                "SesameJSON", "SesameScope", "SesameEncryption", "SesameStorage", "SesameHTTP", "SesameOutbound", "SesameApple", sesameVault, sesamePinning, "SesameTokens", "WebAuthn",
                serviceLifecycle, crypto,
                cryptoExtras,
                postgresNIO, nioPosix, httpTypes, argumentParser, openAPIRuntime,
            ],
            path: "Services/admin/AdminService",
            // Embedded by the EmbedFiles plugin.
            exclude: ["Dashboard/Assets"],
            // EmbedFiles embeds the document; OpenAPIGenerator writes its message types (`openapi.yaml` is a link to it).
            plugins: ["EmbedFiles", .plugin(name: "OpenAPIGenerator", package: "swift-openapi-generator")]
        ),
        .executableTarget(name: "sesame-admin", dependencies: ["AdminService", "SesameServer"], path: "Services/admin/sesame-admin"),

        // MARK: Clients

        .target(
            name: "SesameCLI",
            dependencies: [
                "AppAttest", "SesameDomain", "SesameJSON", "ConfigSchema", sesameVault, argumentParser, crypto, x509, asn1, httpTypes,
                openAPIRuntime, openAPIURLSession,
            ],
            path: "Clients/SesameCLI",
            // The management API's typed client (`Client`, `Operations`, `Components`), generated at build
            // time from `openapi.yaml`, a link to Services/admin/openapi.yaml, the one contract.
            plugins: [.plugin(name: "OpenAPIGenerator", package: "swift-openapi-generator")]
        ),
        .executableTarget(name: "sesame", dependencies: ["SesameCLI"], path: "Clients/sesame"),
        // A software device on SesameKit, for operators to smoke-test a deployment.
        .executableTarget(name: "sesame-device", dependencies: [sesameKit, sesameKitTesting, argumentParser], path: "Clients/sesame-device"),

        // MARK: The local suite (./sesame-dev)

        // Running the local suite's programs, and whether a port listens.
        .target(name: "ChildProcess", path: "Tools/ChildProcess"),
        // The local suite's lifecycle, for `sesame-suite` and for the walk and the soak.
        .target(
            name: "DevSuite", dependencies: ["ChildProcess", crypto, asyncHTTPClient, nioCore, .product(name: "NIOHTTP1", package: "swift-nio")],
            path: "Tools/DevSuite"),
        .executableTarget(name: "sesame-suite", dependencies: ["DevSuite", argumentParser], path: "Tools/sesame-suite"),

        // MARK: Tests

        // The end-to-end walk through the local suite's gateway (run by ./sesame-dev test).
        .executableTarget(
            name: "sesame-e2e",
            dependencies: [
                "ChildProcess", "DevSuite", sesameKit, sesameKitTesting, "AppAttestTesting", "AppleFake", sesameVault, argumentParser, crypto, x509,
                hummingbird, hummingbirdTesting, httpTypes, nioCore, nioFoundationCompat,
            ],
            path: "Tests/EndToEnd"
        ),
        .testTarget(name: "DevSuiteTests", dependencies: ["DevSuite"], path: "Tests/DevSuiteTests"),
        .target(
            name: "SesameTestSupport",
            dependencies: [
                "SesameStorage", "SesameConfiguration", "AppAttest", "AppAttestTesting", "ChildProcess", postgresNIO, serviceLifecycle, hummingbirdTesting,
                crypto, nioCore, nioPosix,
            ],
            path: "Tests/SesameTestSupport"
        ),
        .target(
            name: "WebAuthnTesting",
            dependencies: ["AppAttestTesting", "SesameDomain", crypto],
            path: "Tests/WebAuthnTesting"
        ),
        .target(
            name: "AppAttestTesting",
            dependencies: [sesameKitTesting, "AppAttest", "CBOR", crypto, x509, asn1],
            path: "Tests/AppAttestTesting"
        ),
        .target(
            name: "AppleFake",
            dependencies: ["AppAttestTesting", crypto, hummingbird, hummingbirdTesting, httpTypes, nioCore, nioFoundationCompat],
            path: "Tests/AppleFake"
        ),
        .testTarget(name: "CBORTests", dependencies: ["CBOR", "AppAttestTesting"], path: "Tests/CBORTests"),
        .testTarget(
            name: "ConfigSchemaTests", dependencies: ["ConfigSchema", "SesameDomain", "SesameJSON"], path: "Tests/ConfigSchemaTests",
            resources: [.copy("Suite")]),
        // Apart from ConfigSchemaTests: it runs Python (jsonschema), so it is a service-layer test.
        .testTarget(
            name: "ConfigSchemaOracleTests", dependencies: ["ConfigSchema", "SesameDomain", "SesameJSON", "SesameTestSupport"],
            path: "Tests/ConfigSchemaOracleTests", exclude: ["oracle.py"]),
        .testTarget(
            name: "AppAttestTests",
            dependencies: ["AppAttest", "AppAttestTesting", "CBOR", crypto, x509, asn1],
            path: "Tests/AppAttestTests",
            exclude: ["Fixtures", "Corpus"]
        ),
        .testTarget(name: "SesameConfigurationTests", dependencies: ["SesameConfiguration"], path: "Tests/SesameConfigurationTests"),
        .testTarget(name: "SesameLoggingTests", dependencies: ["SesameLogging"], path: "Tests/SesameLoggingTests"),
        .testTarget(
            name: "SesameTracingTests",
            dependencies: ["SesameTracing", tracing, .product(name: "InMemoryTracing", package: "swift-distributed-tracing")],
            path: "Tests/SesameTracingTests"),
        .testTarget(name: "SesameOutboundTests", dependencies: ["SesameOutbound", "SesameConfiguration", "SesameTestSupport", asyncHTTPClient, nioCore, nioPosix], path: "Tests/SesameOutboundTests"),
        .testTarget(name: "SesameEncryptionTests", dependencies: ["SesameEncryption"], path: "Tests/SesameEncryptionTests"),
        .testTarget(
            name: "SesameStorageTests",
            dependencies: ["SesameStorage", "SesameHTTP", "SesameTestSupport", postgresNIO],
            path: "Tests/SesameStorageTests"
        ),
        .testTarget(
            name: "SesameCLITests",
            dependencies: [
                "SesameCLI", "AppAttest", "AppAttestTesting", "AppleFake", "AdminService", "SesameConfiguration", "SesameTestSupport",
                hummingbirdTesting, argumentParser, crypto, x509, asn1, openAPIRuntime,
            ],
            path: "Tests/SesameCLITests"
        ),
        .testTarget(name: "SesameEventsTests", dependencies: ["SesameEvents"], path: "Tests/SesameEventsTests"),
        .testTarget(
            name: "SesameKafkaTests",
            dependencies: ["SesameKafka", "SesameTestSupport", "SesameConfiguration", "AppAttestTesting", serviceLifecycle, logging],
            path: "Tests/SesameKafkaTests"
        ),
        .testTarget(
            name: "SesameEventBusTests",
            dependencies: [
                "SesameEventBus", "SesameEvents", "SesameKafka", "SesameStorage", "SesameTestSupport", postgresNIO,
                serviceLifecycle, logging,
            ],
            path: "Tests/SesameEventBusTests"
        ),
        .testTarget(
            name: "SesameServerTests",
            dependencies: [
                "AuthService", "DeliveryService", "AdminService", "SesameServer", "SesameHTTP", "SesameStorage",
                "SesameTestSupport", "SesameEncryption", "SesameEventBus", "SesameEvents", "SesameKafka", "SesameConfiguration",
                logging, hummingbirdTesting, postgresNIO, crypto,
            ],
            path: "Tests/SesameServerTests"
        ),
        .testTarget(
            name: "SesameHTTPTests",
            dependencies: [
                "SesameHTTP", "SesameConfiguration", hummingbirdTesting, nioCore, nioHTTPTypes,
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ],
            path: "Tests/SesameHTTPTests"),
        .testTarget(
            name: "AdminServiceTests",
            dependencies: [
                "AdminService", "SesameConfiguration", "SesameDomain", "SesameEncryption", "SesameStorage", "SesameTestSupport",
                "AppAttestTesting", "AppleFake", "CBOR", "WebAuthnTesting", sesameVault, hummingbirdTesting, crypto, postgresNIO,
            ],
            path: "Tests/AdminServiceTests"
        ),
        .testTarget(
            name: "DeliveryServiceTests",
            dependencies: [
                sesameKit, sesameKitTesting,
                "DeliveryService", "AdminService", "AuthService", "AppAttest", "AppAttestTesting", "SesameConfiguration", "SesameTestSupport",
                "SesameDomain", "SesameKafka", "SesameEvents", "SesameHTTP", "SesameRelayProof", sesamePinning, hummingbirdTesting, crypto, cryptoExtras, jwtKit,
                postgresNIO, nioCore,
            ],
            path: "Tests/DeliveryServiceTests",
            exclude: ["verify_pin_registry.py"]
        ),
        .testTarget(name: "SesameDomainTests", dependencies: ["SesameDomain", "SesameJSON", "SesameTestSupport"], path: "Tests/SesameDomainTests"),
        // SesameKit's own wire types held to the services' OpenAPI documents (no service runs).
        .testTarget(name: "SesameKitWireTests", dependencies: [sesameKit, "AuthService", "DeliveryService"], path: "Tests/SesameKitWireTests"),
        .testTarget(
            name: "WebAuthnTests", dependencies: ["WebAuthn", "SesameDomain", crypto], path: "Tests/WebAuthnTests",
            exclude: ["Vectors"]),
        .testTarget(
            name: "AuthServiceTests",
            dependencies: [
                "AuthService", "AppAttest", "AppAttestTesting", "SesameConfiguration", "SesameDomain", "SesameEncryption",
                "SesameStorage", "SesameTestSupport", "SesameTokens", "SesameEvents", "SesameEventBus", "SesameKafka", "SesameApple", "AppleFake",
                hummingbirdTesting, jwtKit, crypto, postgresNIO, logging,
            ],
            path: "Tests/AuthServiceTests"
        ),
    ]
}

// MARK: Benchmarks (./sesame-dev bench)

if declaresServer, Context.environment["SESAME_BENCHMARKS"] != nil {
    // Only the handler-protocol benchmark serves through it: the services do not (see its source).
    package.dependencies.append(.package(url: "https://github.com/hummingbird-project/swift-openapi-hummingbird.git", from: "2.1.0"))
    package.targets += [
        .target(
            name: "BenchmarkSupport",
            dependencies: ["ChildProcess", asyncHTTPClient, httpTypes, hummingbirdTesting, nioCore, .product(name: "NIOHTTP1", package: "swift-nio")],
            path: "Benchmarks/BenchmarkSupport"
        ),
        .executableTarget(
            name: "sesame-eventbus-benchmark",
            dependencies: ["SesameEventBus", "SesameEvents", "SesameKafka", "SesameStorage", "SesameTestSupport", postgresNIO, logging],
            path: "Benchmarks/EventBusBenchmark"
        ),
        .executableTarget(
            name: "sesame-appattest-benchmark",
            dependencies: ["AppAttest", "AppAttestTesting", crypto, x509],
            path: "Benchmarks/AppAttestBenchmark",
            exclude: ["pyattest_benchmark.py"]
        ),
        .executableTarget(
            name: "sesame-auth-benchmark",
            dependencies: [
                "AppAttestTesting", "SesameDomain", "SesameEncryption", "SesameStorage", "SesameTokens", "SesameTestSupport", "BenchmarkSupport",
                crypto, asn1, postgresNIO, logging, hummingbird, hummingbirdTesting,
            ],
            path: "Benchmarks/AuthBenchmark",
            exclude: ["replay.lua", "flood.lua"]
        ),
        .executableTarget(
            name: "sesame-delivery-benchmark",
            dependencies: [
                "AdminService", "AuthService", "DeliveryService", "AppAttestTesting", "SesameConfiguration", "SesameTestSupport",
                "BenchmarkSupport", "SesameLogging", hummingbirdTesting, logging, nioCore, nioPosix,
            ],
            path: "Benchmarks/DeliveryBenchmark"
        ),
        .executableTarget(
            name: "sesame-scale-benchmark",
            dependencies: [
                "AdminService", "AuthService", "AppAttestTesting", "SesameConfiguration", "SesameEncryption", "SesameStorage",
                "SesameTestSupport", "BenchmarkSupport", "SesameLogging", hummingbirdTesting, crypto, logging, postgresNIO, nioCore,
            ],
            path: "Benchmarks/ScaleBenchmark"
        ),
        .executableTarget(
            name: "sesame-streams-benchmark",
            dependencies: [
                "AdminService", "AuthService", "AppAttestTesting", "SesameConfiguration", "SesameServer", "SesameStorage",
                "SesameTestSupport", "BenchmarkSupport", "SesameLogging", sesameKit, hummingbirdTesting, httpTypes, logging, nioCore, nioPosix,
                nioHTTP1, nioFoundationCompat,
            ],
            path: "Benchmarks/StreamsBenchmark"
        ),
        .executableTarget(
            name: "sesame-relay-benchmark",
            dependencies: [
                "AdminService", "AuthService", "AppAttestTesting", "SesameConfiguration", "SesameServer", "SesameStorage", "SesameTestSupport",
                "BenchmarkSupport", "SesameLogging", asyncHTTPClient, asn1, hummingbird, hummingbirdTesting, httpTypes, logging, nioCore, nioHTTP1,
                nioFoundationCompat,
            ],
            path: "Benchmarks/RelayBenchmark"
        ),
        .executableTarget(
            name: "sesame-handler-protocol-benchmark",
            dependencies: [
                hummingbird, hummingbirdTesting, httpTypes, nioCore, openAPIRuntime,
                .product(name: "OpenAPIHummingbird", package: "swift-openapi-hummingbird"),
            ],
            path: "Benchmarks/HandlerProtocolBenchmark",
            plugins: [.plugin(name: "OpenAPIGenerator", package: "swift-openapi-generator")]
        ),
        .executableTarget(
            name: "sesame-soak",
            dependencies: [
                "BenchmarkSupport", "DevSuite", sesameKit, sesameKitTesting, argumentParser, asyncHTTPClient, nioCore,
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Benchmarks/Soak"
        ),
        .executableTarget(
            name: "sesame-crash",
            dependencies: [
                "AppAttestTesting", "BenchmarkSupport", "DevSuite", "SesameConfiguration", "WebAuthnTesting", argumentParser, asn1, crypto, x509,
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Benchmarks/Crash"
        ),
    ]
}

// The upcoming-language settings Hummingbird builds with: `any` spelled out, and members visible
// only from modules a file imports.
for target in package.targets where target.type != .system && target.type != .plugin {
    target.swiftSettings = (target.swiftSettings ?? []) + [
        .enableUpcomingFeature("ExistentialAny"), .enableUpcomingFeature("MemberImportVisibility"),
    ]
}

// swift-tools-version:6.0
import PackageDescription

/// Shared libraries live in `Shared/`, one concern each; services in `Services/<name>/`
/// (a library with the service's builder, and a thin executable); tests in `Tests/`.
let package = Package(
    name: "Sesame",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "sesame-auth", targets: ["sesame-auth"]),
        .executable(name: "sesame-delivery", targets: ["sesame-delivery"]),
        .executable(name: "sesame-admin", targets: ["sesame-admin"]),
        .executable(name: "sesame", targets: ["sesame"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.20.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.0.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.0"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.0"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.7.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.80.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.30.0"),
    ],
    targets: [
        // MARK: Shared libraries

        .target(name: "CBOR", path: "Shared/CBOR"),
        .target(
            name: "AppAttest",
            dependencies: [
                "CBOR",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            path: "Shared/AppAttest"
        ),
        .target(
            name: "SesameConfiguration",
            dependencies: [.product(name: "Logging", package: "swift-log")],
            path: "Shared/SesameConfiguration"
        ),
        .target(
            name: "SesameLogging",
            dependencies: [.product(name: "Logging", package: "swift-log")],
            path: "Shared/SesameLogging"
        ),
        .target(
            name: "SesameEncryption",
            dependencies: ["SesameDomain", .product(name: "Crypto", package: "swift-crypto")],
            path: "Shared/SesameEncryption"
        ),
        .target(
            name: "SesameStorage",
            dependencies: [
                "SesameConfiguration", "SesameDomain",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
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
            dependencies: [
                "SesameConfiguration",
                "CRdKafka",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Shared/SesameKafka"
        ),
        .target(name: "SesameEvents", path: "Shared/SesameEvents"),
        .target(
            name: "SesameEventBus",
            dependencies: [
                "SesameConfiguration",
                "SesameEvents", "SesameKafka", "SesameStorage",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Shared/SesameEventBus"
        ),
        .target(name: "SesameDomain", path: "Shared/SesameDomain"),
        .target(
            name: "SesameVault",
            dependencies: [.product(name: "Crypto", package: "swift-crypto"), .product(name: "CryptoExtras", package: "swift-crypto")],
            path: "Shared/SesameVault"
        ),
        .target(
            name: "SesameTokens",
            dependencies: [
                "SesameConfiguration", "SesameDomain", "SesameEncryption", "SesameEventBus", "SesameEvents", "SesameStorage",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Shared/SesameTokens"
        ),
        .target(
            name: "SesameHTTP",
            dependencies: [
                "SesameConfiguration",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            path: "Shared/SesameHTTP"
        ),
        .target(
            name: "SesameServer",
            dependencies: [
                "SesameConfiguration", "SesameLogging", "SesameHTTP", "SesameStorage", "SesameEncryption", "SesameKafka",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Shared/SesameServer"
        ),

        // MARK: Services

        .target(
            name: "AuthService",
            dependencies: [
                "SesameServer", "SesameTokens", "SesameDomain", "AppAttest", "SesameHTTP", "SesameStorage", "SesameConfiguration",
                "SesameEventBus", "SesameEvents", "SesameKafka",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            path: "Services/auth/AuthService"
        ),
        .executableTarget(name: "sesame-auth", dependencies: ["AuthService", "SesameServer"], path: "Services/auth/sesame-auth"),
        .target(
            name: "DeliveryService",
            dependencies: [
                "SesameServer", "SesameDomain", "SesameEncryption", "SesameEventBus", "SesameEvents", "SesameHTTP", "SesameKafka",
                "SesameStorage", "SesameTokens", "SesameConfiguration",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Services/delivery/DeliveryService"
        ),
        .executableTarget(
            name: "sesame-delivery", dependencies: ["DeliveryService", "SesameServer"], path: "Services/delivery/sesame-delivery"),
        .target(
            name: "AdminService",
            dependencies: [
                "SesameServer", "SesameConfiguration", "SesameEventBus", "SesameEvents", "SesameKafka", "SesameDomain", "SesameEncryption",
                "SesameStorage", "SesameHTTP", "SesameVault", "SesameTokens",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Services/admin/AdminService"
        ),
        .executableTarget(name: "sesame-admin", dependencies: ["AdminService", "SesameServer"], path: "Services/admin/sesame-admin"),

        // MARK: Clients

        .target(
            name: "SesameCLI",
            dependencies: [
                "AppAttest", "SesameDomain", "SesameVault",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            path: "Clients/SesameCLI"
        ),
        .executableTarget(name: "sesame", dependencies: ["SesameCLI"], path: "Clients/sesame"),

        // MARK: Benchmarks (run with ./sesame-dev bench)

        .target(name: "BenchmarkSupport", path: "Benchmarks/BenchmarkSupport"),
        .executableTarget(
            name: "sesame-eventbus-benchmark",
            dependencies: [
                "SesameEventBus", "SesameEvents", "SesameKafka", "SesameStorage", "SesameTestSupport",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/EventBusBenchmark"
        ),
        .executableTarget(
            name: "sesame-appattest-benchmark",
            dependencies: [
                "AppAttest", "AppAttestTesting",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            path: "Benchmarks/AppAttestBenchmark",
            exclude: ["pyattest_benchmark.py"]
        ),
        .executableTarget(
            name: "sesame-auth-benchmark",
            dependencies: [
                "AuthService", "AppAttest", "AppAttestTesting", "SesameConfiguration", "SesameDomain", "SesameStorage",
                "SesameTestSupport", "BenchmarkSupport",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/AuthBenchmark",
            exclude: ["replay.lua"]
        ),
        .executableTarget(
            name: "sesame-delivery-benchmark",
            dependencies: [
                "AdminService", "AuthService", "DeliveryService", "AppAttestTesting", "SesameConfiguration", "SesameTestSupport",
                "BenchmarkSupport", "SesameLogging",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Benchmarks/DeliveryBenchmark"
        ),

        // MARK: Tests

        // The end-to-end walk through the local suite's gateway (run by ./sesame-dev test).
        .executableTarget(
            name: "sesame-e2e",
            dependencies: [
                "AppAttestTesting", "SesameVault",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            path: "Tests/EndToEnd"
        ),
        .target(
            name: "SesameTestSupport",
            dependencies: [
                "SesameStorage", "SesameConfiguration", "AppAttestTesting",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Tests/SesameTestSupport"
        ),
        .target(
            name: "AppAttestTesting",
            dependencies: [
                "AppAttest", "CBOR",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            path: "Tests/AppAttestTesting"
        ),
        .testTarget(name: "CBORTests", dependencies: ["CBOR", "AppAttestTesting"], path: "Tests/CBORTests"),
        .testTarget(
            name: "AppAttestTests",
            dependencies: [
                "AppAttest", "AppAttestTesting", "CBOR",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            path: "Tests/AppAttestTests",
            exclude: ["Fixtures", "Corpus"]
        ),
        .testTarget(name: "SesameConfigurationTests", dependencies: ["SesameConfiguration"], path: "Tests/SesameConfigurationTests"),
        .testTarget(name: "SesameLoggingTests", dependencies: ["SesameLogging"], path: "Tests/SesameLoggingTests"),
        .testTarget(name: "SesameEncryptionTests", dependencies: ["SesameEncryption"], path: "Tests/SesameEncryptionTests"),
        .testTarget(
            name: "SesameStorageTests",
            dependencies: ["SesameStorage", "SesameTestSupport", .product(name: "PostgresNIO", package: "postgres-nio")],
            path: "Tests/SesameStorageTests"
        ),
        .testTarget(
            name: "SesameCLITests",
            dependencies: [
                "SesameCLI", "AppAttest", "AppAttestTesting", "AdminService", "SesameConfiguration", "SesameTestSupport",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            path: "Tests/SesameCLITests"
        ),
        .testTarget(name: "SesameEventsTests", dependencies: ["SesameEvents"], path: "Tests/SesameEventsTests"),
        .testTarget(
            name: "SesameKafkaTests",
            dependencies: [
                "SesameKafka", "SesameTestSupport", "SesameConfiguration", "AppAttestTesting",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/SesameKafkaTests"
        ),
        .testTarget(
            name: "SesameEventBusTests",
            dependencies: [
                "SesameEventBus", "SesameEvents", "SesameKafka", "SesameStorage", "SesameTestSupport",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/SesameEventBusTests"
        ),
        .testTarget(
            name: "ServiceTests",
            dependencies: [
                "AuthService", "DeliveryService", "AdminService", "SesameServer", "SesameHTTP", "SesameStorage", "SesameTestSupport",
                "SesameEncryption", "SesameEventBus", "SesameEvents", "SesameKafka", "SesameConfiguration",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Tests/ServiceTests"
        ),
        .testTarget(
            name: "SesameHTTPTests",
            dependencies: ["SesameHTTP", "SesameConfiguration", .product(name: "HummingbirdTesting", package: "hummingbird")],
            path: "Tests/SesameHTTPTests"),
        .testTarget(
            name: "AdminServiceTests",
            dependencies: [
                "AdminService", "SesameConfiguration", "SesameDomain", "SesameEncryption", "SesameStorage", "SesameTestSupport", "SesameVault",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            path: "Tests/AdminServiceTests"
        ),
        .testTarget(
            name: "DeliveryServiceTests",
            dependencies: [
                "DeliveryService", "AdminService", "AuthService", "AppAttestTesting", "SesameConfiguration", "SesameTestSupport",
                "SesameDomain", "SesameKafka", "SesameEvents", "SesameHTTP",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            path: "Tests/DeliveryServiceTests"
        ),
        .testTarget(name: "SesameDomainTests", dependencies: ["SesameDomain"], path: "Tests/SesameDomainTests"),
        .testTarget(name: "SesameVaultTests", dependencies: ["SesameVault"], path: "Tests/SesameVaultTests", resources: [.copy("Vectors")]),
        .testTarget(
            name: "AuthServiceTests",
            dependencies: [
                "AuthService", "AppAttest", "AppAttestTesting", "SesameConfiguration", "SesameDomain", "SesameEncryption",
                "SesameStorage", "SesameTestSupport", "SesameTokens", "SesameEvents", "SesameKafka",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/AuthServiceTests"
        ),
    ]
)

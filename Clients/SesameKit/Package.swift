// swift-tools-version:6.0
import PackageDescription

/// SesameKit: what an iOS app adds to get its config from Sesame without shipping secrets. Its own
/// package, so an app never resolves the server's Hummingbird, PostgresNIO or librdkafka: the
/// `SesameKit` library needs Foundation and swift-crypto only. `SesameKitTesting` (the software
/// App Attest for tests and development) adds swift-certificates to write its certificates.
let package = Package(
    name: "SesameKit",
    platforms: [.iOS(.v15), .macOS(.v13)],
    products: [
        .library(name: "SesameKit", targets: ["SesameKit"]),
        .library(name: "SesameKitTesting", targets: ["SesameKitTesting"]),
        // The zero-knowledge envelope on its own: the server's CLI and admin use this one implementation.
        .library(name: "SesameVault", targets: ["SesameVault"]),
        // The SslPinning-compatible registry (JCS + RSA PKCS#1 v1.5 SHA-512): admin signs with it, apps verify with it.
        .library(name: "SesamePinning", targets: ["SesamePinning"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.0"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.0"),
    ],
    targets: [
        .target(
            name: "SesameVault",
            dependencies: [.product(name: "Crypto", package: "swift-crypto"), .product(name: "CryptoExtras", package: "swift-crypto")]
        ),
        .target(
            name: "SesamePinning",
            dependencies: [.product(name: "Crypto", package: "swift-crypto"), .product(name: "CryptoExtras", package: "swift-crypto")]
        ),
        .target(name: "SesameKit", dependencies: ["SesameVault", "SesamePinning", .product(name: "Crypto", package: "swift-crypto")]),
        .target(
            name: "SesameKitTesting",
            dependencies: [
                "SesameKit", .product(name: "Crypto", package: "swift-crypto"), .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        .testTarget(
            name: "SesameKitTests",
            dependencies: ["SesameKit", "SesameKitTesting", "SesameVault", "SesamePinning", .product(name: "CryptoExtras", package: "swift-crypto")]
        ),
        .testTarget(name: "SesameVaultTests", dependencies: ["SesameVault"], resources: [.copy("Vectors")]),
        .testTarget(
            name: "SesamePinningTests",
            dependencies: [
                "SesamePinning", .product(name: "X509", package: "swift-certificates"), .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            resources: [.copy("Vectors")]
        ),
    ]
)

for target in package.targets {
    target.swiftSettings = (target.swiftSettings ?? []) + [
        .enableUpcomingFeature("ExistentialAny"), .enableUpcomingFeature("MemberImportVisibility"),
    ]
}

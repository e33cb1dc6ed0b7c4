// swift-tools-version:6.0
import PackageDescription

/// SesameKit: what an iOS app adds to get its config from Sesame without shipping secrets. Its own
/// package, so an app resolves Foundation and swift-crypto only — never the server's Hummingbird,
/// PostgresNIO or librdkafka.
let package = Package(
    name: "SesameKit",
    platforms: [.iOS(.v15), .macOS(.v13)],
    products: [
        .library(name: "SesameKit", targets: ["SesameKit"]),
        // The zero-knowledge envelope on its own: the server's CLI and admin use this one implementation.
        .library(name: "SesameVault", targets: ["SesameVault"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
    ],
    targets: [
        .target(
            name: "SesameVault",
            dependencies: [.product(name: "Crypto", package: "swift-crypto"), .product(name: "CryptoExtras", package: "swift-crypto")]
        ),
        .target(name: "SesameKit", dependencies: ["SesameVault", .product(name: "Crypto", package: "swift-crypto")]),
        .testTarget(name: "SesameKitTests", dependencies: ["SesameKit", "SesameVault"]),
        .testTarget(name: "SesameVaultTests", dependencies: ["SesameVault"], resources: [.copy("Vectors")]),
    ]
)

for target in package.targets {
    target.swiftSettings = (target.swiftSettings ?? []) + [
        .enableUpcomingFeature("ExistentialAny"), .enableUpcomingFeature("MemberImportVisibility"),
    ]
}

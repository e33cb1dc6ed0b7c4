// swift-tools-version:6.0
import PackageDescription

/// An app's package, as an iOS team writes it: it adds Sesame by URL and uses the SDK's products.
/// `./sesame-dev test` points `SESAME_REPOSITORY_URL` at a `file://` clone of the working tree,
/// builds this and runs it, and checks that resolving it fetched none of the server's packages.
let package = Package(
    name: "AppByURL",
    platforms: [.iOS(.v16), .macOS(.v13)],
    dependencies: [
        .package(url: Context.environment["SESAME_REPOSITORY_URL"] ?? "https://github.com/sesame/sesame.git", branch: "main")
    ],
    targets: [
        .executableTarget(
            name: "App",
            dependencies: [
                .product(name: "SesameKit", package: "sesame"),
                .product(name: "SesameKitTesting", package: "sesame"),
                .product(name: "SesamePinning", package: "sesame"),
            ]),
        // The README's quick start, copied verbatim by ./sesame-dev test (it prints what it read);
        // the end-to-end walk runs it against the local suite.
        .executableTarget(name: "QuickStart", dependencies: [.product(name: "SesameKit", package: "sesame")]),
    ]
)

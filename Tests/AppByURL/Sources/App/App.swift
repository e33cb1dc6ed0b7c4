import Foundation
import SesameKit
import SesameKitTesting
import SesamePinning

/// What an app writes on its first morning with SesameKit, compiled against the products a URL
/// dependency vends. Run, it plays a launch against a software device and a Sesame that is not there:
/// no config saved and none reachable, so the fallback config is what it gets.
@main
struct App {
    static func main() async throws {
        let authority = SoftwareAttestationAuthority()
        let client = SesameClient(
            configuration: SesameClient.Configuration(
                baseURL: URL(string: "https://127.0.0.1:9")!, teamID: "A1B2C3D4E5", bundleID: "com.example.app", appVersion: "2.1.3",
                cachePolicy: SesameClient.CachePolicy(maxStaleness: .seconds(7 * 86_400), onStaleConfig: .warnAndUse),
                fallbackConfig: ["features": .object(["checkout": .bool(false)])]),
            attestation: SoftwareAppAttest(appID: "A1B2C3D4E5.com.example.app", authority: authority), store: InMemorySecureStore())
        let config = try await client.fetchConfig(scope: ["features"])
        guard config.source == .fallback, config.bool("features.checkout") == false else {
            print("unexpected config: \(config)")
            exit(1)
        }
        #if canImport(DeviceCheck) && canImport(Security)
        // What ships: App Attest in the Secure Enclave and the Keychain.
        _ = SesameClient(configuration: client.configuration, attestation: DeviceCheckAppAttest(), store: SesameKeychainStore())
        #endif
        print("an app built SesameKit by URL and launched on its fallback config")
    }
}

import Foundation

extension SesameClient {
    private static let sharedClient = Locked<SesameClient?>(nil)

    /// The client `configure` made, for the whole app (as `FirebaseApp.app()`).
    ///
    /// Reading it before `configure` is a programming error and stops the app with a message
    /// saying so, as Firebase does.
    public static var shared: SesameClient {
        guard let client = sharedClient.withLock({ $0 }) else {
            preconditionFailure(
                "SesameClient.shared was read before SesameClient.configure(): call configure() once at launch, in your App's init or application(_:didFinishLaunchingWithOptions:)."
            )
        }
        return client
    }

    /// Whether `configure` has run: `shared` may be read.
    public static var isConfigured: Bool { sharedClient.withLock { $0 != nil } }

    /// Makes `client` the shared one (`SesameClient.shared`) and returns it.
    @discardableResult
    public static func configure(_ client: SesameClient) -> SesameClient {
        sharedClient.withLock { $0 = client }
        return client
    }

    /// Makes the shared client for `configuration`, with `attestation` and `store`, and returns it.
    @discardableResult
    public static func configure(_ configuration: Configuration, attestation: any AppAttestProvider, store: any SecureStore) -> SesameClient {
        configure(SesameClient(configuration: configuration, attestation: attestation, store: store))
    }

    /// Makes `client` the shared one. Renamed `configure(_:)`.
    @available(*, deprecated, renamed: "configure(_:)")
    @discardableResult
    public static func configureShared(_ client: SesameClient) -> SesameClient {
        configure(client)
    }
}

#if canImport(DeviceCheck) && canImport(Security)
extension SesameClient {
    /// The one line an app starts with: the shared client for the app `bundle` describes
    /// (`Configuration(bundle:)`: `SesameBaseURL` and `SesameTeamID` from its Info.plist, its bundle
    /// id and version), with App Attest (`DeviceCheckAppAttest`) and the Keychain (`SesameKeychainStore`).
    ///
    /// ```swift
    /// @main struct ShopApp: App {
    ///     init() { SesameClient.configure() }
    ///     …
    /// }
    /// ```
    ///
    /// A missing Info.plist key stops the app with a message naming it, as a misconfigured
    /// `FirebaseApp.configure()` does.
    @discardableResult
    public static func configure(bundle: Bundle = .main) -> SesameClient {
        let configuration: Configuration
        do {
            configuration = try Configuration(bundle: bundle)
        } catch {
            preconditionFailure("SesameClient.configure(): \(error.localizedDescription)")
        }
        return configure(configuration, attestation: DeviceCheckAppAttest(), store: SesameKeychainStore())
    }
}
#endif

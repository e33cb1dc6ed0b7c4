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

extension SesameClient {
    /// The environment variable `configure()` takes a debug token from where App Attest is
    /// unavailable (the Simulator, a CI job, Linux): a token from `sesame debug-tokens create`. Xcode
    /// sets it from the scheme; a shipped app has no such environment, and a device that can attest
    /// ignores it.
    public static let debugTokenEnvironmentKey = "SESAME_DEBUG_TOKEN"

    /// The one line an app starts with: the shared client for the app `bundle` describes
    /// (`Configuration(bundle:)`: `SesameBaseURL` and `SesameTeamID` from its Info.plist, its bundle
    /// id and version), with App Attest (`DeviceCheckAppAttest`) and the Keychain
    /// (`SesameKeychainStore`). Where App Attest is unavailable, a debug token in
    /// `SESAME_DEBUG_TOKEN` is used instead (`DebugTokenAttest`); without one the Simulator asks for
    /// the `unattested` tier. Off Apple platforms (a Linux tool, CI) the token is required and the
    /// store is in memory.
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
    public static func configure(bundle: Bundle = .main, environment: [String: String] = ProcessInfo.processInfo.environment) -> SesameClient {
        let configuration: Configuration
        do {
            configuration = try Configuration(bundle: bundle)
        } catch {
            preconditionFailure("SesameClient.configure(): \(error.localizedDescription)")
        }
        let debugToken = environment[debugTokenEnvironmentKey].flatMap { $0.isEmpty ? nil : DebugTokenAttest(token: $0) }
        #if canImport(DeviceCheck) && canImport(Security)
        let appAttest = DeviceCheckAppAttest()
        if !appAttest.isSupported, let debugToken {
            return configure(configuration, attestation: debugToken, store: SesameKeychainStore())
        }
        return configure(configuration, attestation: appAttest, store: SesameKeychainStore())
        #else
        guard let debugToken else {
            preconditionFailure(
                "SesameClient.configure(): App Attest is not available on this platform; set \(debugTokenEnvironmentKey) to a token from `sesame debug-tokens create`, or use configure(_:attestation:store:)."
            )
        }
        return configure(configuration, attestation: debugToken, store: InMemorySecureStore())
        #endif
    }
}

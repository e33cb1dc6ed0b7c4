#if canImport(SwiftUI)
import SwiftUI

/// One value of the live config in a SwiftUI view, with the default it has until (or unless) the
/// config says otherwise:
///
/// ```swift
/// struct CheckoutButton: View {
///     @SesameValue("features.checkout", default: false) private var checkoutEnabled
///     var body: some View { Button("Pay") { … }.disabled(!checkoutEnabled) }
/// }
/// ```
///
/// Each holds a `SesameLiveConfig` of the whole config, and every one of a client shares that
/// config's one connection; the view redraws when a publish changes the config.
@MainActor
@propertyWrapper
public struct SesameValue<Value: Sendable>: DynamicProperty {
    @StateObject private var live: SesameLiveConfig
    private let path: String
    private let defaultValue: Value
    private let read: @MainActor @Sendable (SesameConfig, String) -> Value?

    /// The value at the path, or the default.
    public var wrappedValue: Value { live.config.flatMap { read($0, path) } ?? defaultValue }

    private init(path: String, defaultValue: Value, client: SesameClient, read: @escaping @MainActor @Sendable (SesameConfig, String) -> Value?) {
        _live = StateObject(wrappedValue: SesameLiveConfig(client: client))
        self.path = path
        self.defaultValue = defaultValue
        self.read = read
    }
}

extension SesameValue where Value == Bool {
    /// The boolean at `path` (`features.checkout`) of `client`'s config, or `defaultValue`.
    public init(_ path: String, default defaultValue: Bool, client: SesameClient = .shared) {
        self.init(path: path, defaultValue: defaultValue, client: client) { $0.bool($1) }
    }
}

extension SesameValue where Value == String {
    /// The string at `path` of `client`'s config, or `defaultValue`.
    public init(_ path: String, default defaultValue: String, client: SesameClient = .shared) {
        self.init(path: path, defaultValue: defaultValue, client: client) { $0.string($1) }
    }
}

extension SesameValue where Value == Int {
    /// The integer at `path` of `client`'s config, or `defaultValue`.
    public init(_ path: String, default defaultValue: Int, client: SesameClient = .shared) {
        self.init(path: path, defaultValue: defaultValue, client: client) { $0.int($1) }
    }
}
#endif

import Foundation
import Observation

#if canImport(Combine)
import Combine
#endif

/// The app's live config for SwiftUI and UIKit, on the main actor: `config` starts as the client's
/// `current` (the saved copy or the fallback, for the first frame) and follows `updates(scope:)`,
/// sharing the client's one connection with every other observer of the scope. An
/// `ObservableObject` where Combine exists (iOS 16), and `Observable` from iOS 17 and macOS 14, so
/// a view that holds one (`@StateObject`, or `@State` with Observation) redraws when it changes.
///
/// ```swift
/// struct CheckoutButton: View {
///     @StateObject private var live = SesameLiveConfig(scope: ["features"])
///     var body: some View {
///         Button("Pay") { … }.disabled(!live.bool("features.checkout", default: false))
///     }
/// }
/// ```
@MainActor
public final class SesameLiveConfig {
    /// The newest config; nil until there is one (nothing saved, no fallback, no answer yet).
    public var config: SesameConfig? {
        observed(\.config)
        return newestConfig
    }
    /// Why the updates stopped: `versionDisabled` (show the update screen with its
    /// `killSwitchReason`), a lasting refusal, or the first fetch's failure. Nil while they run.
    public var error: SesameError? {
        observed(\.error)
        return stopError
    }

    private var newestConfig: SesameConfig?
    private var stopError: SesameError?
    private let follower = Locked<Task<Void, Never>?>(nil)
    /// Observation's registrar from iOS 17 and macOS 14 (a stored property cannot be newer than
    /// its type, so it is held untyped); nil before.
    private let registrar: (any Sendable)? = {
        if #available(iOS 17, macOS 14, *) { return ObservationRegistrar() }
        return nil
    }()

    /// Follows `scope` of `client`'s config (the shared client's by default).
    public init(client: SesameClient = .shared, scope: [String] = []) {
        newestConfig = scope.isEmpty ? client.current : nil
        let task = Task { [weak self] in
            do {
                for try await config in client.updates(scope: scope) {
                    guard let self else { return }
                    self.apply(config)
                }
            } catch {
                self?.stop(with: error as? SesameError ?? .network(underlying: String(describing: error)))
            }
        }
        follower.withLock { $0 = task }
    }

    deinit {
        follower.withLock { $0?.cancel() }
    }

    /// The boolean at `path`, or `defaultValue`.
    public func bool(_ path: String, default defaultValue: Bool) -> Bool { config?.bool(path) ?? defaultValue }
    /// The string at `path`, or `defaultValue`.
    public func string(_ path: String, default defaultValue: String) -> String { config?.string(path) ?? defaultValue }
    /// The integer at `path`, or `defaultValue`.
    public func int(_ path: String, default defaultValue: Int) -> Int { config?.int(path) ?? defaultValue }

    private func apply(_ newConfig: SesameConfig) {
        guard newConfig != newestConfig else { return }
        changing(\.config) { newestConfig = newConfig }
    }

    private func stop(with stopped: SesameError) {
        changing(\.error) { stopError = stopped }
    }

    /// Tells Observation that `keyPath` was read (iOS 17, macOS 14).
    private func observed<Member>(_ keyPath: KeyPath<SesameLiveConfig, Member>) {
        if #available(iOS 17, macOS 14, *), let registrar = registrar as? ObservationRegistrar { registrar.access(self, keyPath: keyPath) }
    }

    /// Makes a change, telling Combine's observers before and Observation's around it.
    private func changing<Member>(_ keyPath: KeyPath<SesameLiveConfig, Member>, _ change: () -> Void) {
        #if canImport(Combine)
        objectWillChange.send()
        #endif
        if #available(iOS 17, macOS 14, *), let registrar = registrar as? ObservationRegistrar {
            registrar.withMutation(of: self, keyPath: keyPath, change)
        } else {
            change()
        }
    }
}

@available(iOS 17, macOS 14, *)
extension SesameLiveConfig: Observable {}

#if canImport(Combine)
extension SesameLiveConfig: ObservableObject {}
#endif

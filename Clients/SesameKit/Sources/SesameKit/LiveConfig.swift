import Foundation

#if canImport(Combine)
import Combine
#endif

/// The app's live config for SwiftUI and UIKit, on the main actor: `config` starts as the client's
/// `current` (the saved copy or the fallback, for the first frame) and follows `updates(scope:)`,
/// sharing the client's one connection with every other observer of the scope. An
/// `ObservableObject` where Combine exists, so a view that holds one redraws when it changes.
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
    public private(set) var config: SesameConfig?
    /// Why the updates stopped: `versionDisabled` (show the update screen with its
    /// `killSwitchReason`), a lasting refusal, or the first fetch's failure. Nil while they run.
    public private(set) var error: SesameError?

    private let follower = Locked<Task<Void, Never>?>(nil)

    /// Follows `scope` of `client`'s config (the shared client's by default).
    public init(client: SesameClient = .shared, scope: [String] = []) {
        config = scope.isEmpty ? client.current : nil
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
        guard newConfig != config else { return }
        willChange()
        config = newConfig
    }

    private func stop(with stopped: SesameError) {
        willChange()
        error = stopped
    }

    private func willChange() {
        #if canImport(Combine)
        objectWillChange.send()
        #endif
    }
}

#if canImport(Combine)
extension SesameLiveConfig: ObservableObject {}
#endif

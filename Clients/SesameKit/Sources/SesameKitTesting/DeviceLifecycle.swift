import Foundation
import SesameKit

/// An iPhone's day, played for SesameKit on Linux or in an app's own tests: a wall clock the user
/// sets and an uptime that restarts with the device, a Keychain that outlives the app and an app
/// container that a reinstall deletes, the trips to the background and back, and the time the
/// system grants a renewal the app started before leaving the foreground.
///
/// ```swift
/// let device = try DeviceLifecycle()
/// let client = device.client(configuration: configuration, attestation: SoftwareAppAttest(authority: authority), transport: scripted)
/// _ = try await client.fetchConfig()
/// device.setClock(by: -86_400)  // the user moves the clock back a day
/// try device.reinstall()        // deleted and installed again: the Keychain stays
/// ```
///
/// Sleeps SesameKit asks for (a backoff, a retry) return at once and are recorded in `sleeps`;
/// after `letSleepsPassTime(for:)` they move the device's time on instead, up to a limit.
public final class DeviceLifecycle: Sendable {
    private struct State {
        var now: Date
        var uptime: TimeInterval = 1_000
        var sleeps: [Duration] = []
        var activitiesOpen = 0
        var activities: [String] = []
        /// While set, sleeps move the time on, and one that would pass this instant waits until cancelled.
        var sleepsPassTimeUntil: Date?
    }

    private let state: Locked<State>
    /// The Keychain: it outlives the app (iOS keeps an app's items when it is deleted).
    public let keychain = InMemorySecureStore()
    /// The app's container, which a reinstall deletes: SesameKit's first-run marker lives there.
    public let container: URL

    /// A device whose wall clock reads `now`, with an empty Keychain and a new app container.
    public init(now: Date = Date(timeIntervalSince1970: 1_800_000_000)) throws {
        state = Locked(State(now: now))
        container = FileManager.default.temporaryDirectory.appendingPathComponent("sesamekit-device-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: container, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(at: container)
    }

    /// A `SesameClient` as the app on this device makes it at a launch: its store is the device's
    /// Keychain (or `store`), its clock the device's, its renewals run as the device's background
    /// activities.
    public func client(
        configuration: SesameClient.Configuration, attestation: any AppAttestProvider, transport: any HTTPTransport,
        store: (any SecureStore)? = nil
    ) -> SesameClient {
        SesameClient(
            configuration: configuration, attestation: attestation, store: store ?? keychain, transport: transport,
            clock: ClientClock(
                now: { [state] in state.withLock { $0.now } }, uptime: { [state] in state.withLock { $0.uptime } },
                sleep: { [state] duration in try await Self.sleep(duration, on: state) }),
            background: RecordedActivity(state: state),
            installMarker: container.appendingPathComponent("Library/Application Support/SesameKit/installed"))
    }

    private static func sleep(_ duration: Duration, on state: Locked<State>) async throws {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        let passesLimit = state.withLock { state -> Bool? in
            state.sleeps.append(duration)
            guard let limit = state.sleepsPassTimeUntil else { return nil }
            let step = min(seconds, max(0, limit.timeIntervalSince(state.now)))
            state.now.addTimeInterval(step)
            state.uptime += step
            return step < seconds || state.now >= limit
        }
        guard let passesLimit else { return }
        // Past the limit nothing more happens in the device's time: the sleep lasts until cancelled.
        if passesLimit { try await Task.sleep(for: .seconds(3600)) }
        await Task.yield()
    }

    // MARK: Time

    /// What the wall clock reads.
    public var now: Date { state.withLock { $0.now } }
    /// The sleeps SesameKit asked for, in order.
    public var sleeps: [Duration] { state.withLock { $0.sleeps } }

    /// Time passes: the wall clock and the uptime move on together.
    public func advance(_ seconds: TimeInterval) {
        state.withLock {
            $0.now.addTimeInterval(seconds)
            $0.uptime += seconds
        }
    }

    /// The user sets the wall clock by `seconds` (negative: back); the uptime does not move.
    public func setClock(by seconds: TimeInterval) {
        state.withLock { $0.now.addTimeInterval(seconds) }
    }

    /// From now on, SesameKit's sleeps move the device's time on (a minute of backoff passes at
    /// once) for `seconds`; a sleep that would pass that waits until its task is cancelled, so what
    /// a client does in that time can be counted exactly.
    public func letSleepsPassTime(for seconds: TimeInterval) {
        state.withLock { $0.sleepsPassTimeUntil = $0.now.addingTimeInterval(seconds) }
    }

    /// The device restarts: its uptime starts over (the wall clock goes on).
    public func restart() {
        state.withLock { $0.uptime = 5 }
    }

    // MARK: The app's lifecycle

    /// The app is deleted and installed again: its container goes, the Keychain stays.
    public func reinstall() throws {
        try FileManager.default.removeItem(at: container)
        try FileManager.default.createDirectory(at: container, withIntermediateDirectories: true)
    }

    /// The app goes to the background, as UIKit tells it (`didEnterBackgroundNotification`).
    public func enterBackground() {
        NotificationCenter.default.post(name: SesameClient.backgroundNotifications[0], object: nil)
    }

    /// The app returns to the foreground, as UIKit tells it (`willEnterForegroundNotification`).
    public func enterForeground() {
        // UIKit's alone (the list's first): an iPhone does not also post AppKit's.
        NotificationCenter.default.post(name: SesameClient.foregroundNotifications[0], object: nil)
    }

    /// How many background activities (token renewals) are running now: work the system would let
    /// finish if the app left the foreground.
    public var backgroundActivitiesOpen: Int { state.withLock { $0.activitiesOpen } }
    /// The names of the background activities started so far, in order.
    public var backgroundActivities: [String] { state.withLock { $0.activities } }

    private struct RecordedActivity: BackgroundActivity {
        let state: Locked<State>

        func run<T: Sendable>(named name: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
            state.withLock {
                $0.activitiesOpen += 1
                $0.activities.append(name)
            }
            defer { state.withLock { $0.activitiesOpen -= 1 } }
            return try await body()
        }
    }
}

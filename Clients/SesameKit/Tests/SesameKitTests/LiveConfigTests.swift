import Foundation
import Observation
import SesameKitTesting
import Testing

@testable import SesameKit

/// The config as views watch it: one connection however many observers, a synchronous `current`
/// for the first frame, and `SesameLiveConfig` updating on the main actor when Sesame publishes.
/// In the live updates' suite, which runs one test at a time: its lifecycle test posts app-wide
/// notifications that would close these tests' streams too.
extension LiveUpdateTests {
    static let announceRevision: @Sendable (Int, ScriptedSesame) -> (status: Int, events: String) = { _, sesame in
        let revision = sesame.with { $0.revision }
        return (200, "event: config\nid: \"\(revision)-etag\"\ndata: {}\n\n")
    }

    static func viewClient(_ transport: any HTTPTransport, on device: DeviceLifecycle, fallback: [String: SesameConfig.Value]? = nil) -> SesameClient {
        device.client(
            configuration: SesameClient.Configuration(
                baseURL: URL(string: "https://sesame.example.com")!, teamID: "A1B2C3D4E5", bundleID: "com.example.app", appVersion: "2.1.3",
                fallbackConfig: fallback),
            attestation: FakeAppAttest(), transport: transport)
    }

    /// Revision 2 published (`features.checkout` on) and announced down every open stream.
    static func publishCheckout(_ sesame: ScriptedSesame, down transport: StreamingSesame) {
        sesame.with {
            $0.config = #"{"features":{"checkout":true}}"#
            $0.revision = 2
        }
        transport.push("event: config\nid: \"2-etag\"\ndata: {}\n\n")
    }

    /// A view's `SesameLiveConfig` on a first launch, once it has its first config and its stream is open.
    @MainActor
    static func watchingView() async throws -> (sesame: ScriptedSesame, transport: StreamingSesame, live: SesameLiveConfig) {
        let sesame = ScriptedSesame()
        let transport = StreamingSesame(sesame, holdOpen: true, answer: Self.announceRevision)
        let live = SesameLiveConfig(client: Self.viewClient(transport, on: try DeviceLifecycle()))
        try await Self.eventually("the first config") { await MainActor.run { live.config != nil } }
        try await Self.eventually("the stream open") { transport.opened.withLock { $0 } == 1 }
        return (sesame, transport, live)
    }

    static func eventually(_ what: String, _ condition: @Sendable () async -> Bool) async throws {
        for _ in 0..<1000 where !(await condition()) { try await Task.sleep(for: .milliseconds(2)) }
        #expect(await condition(), "\(what)")
    }

    @Test("three observers of one scope share one connection; the later ones get the last config at once, without a fetch")
    func oneConnectionForManyObservers() async throws {
        let sesame = ScriptedSesame()
        let transport = StreamingSesame(sesame, holdOpen: true, answer: Self.announceRevision)
        let client = Self.viewClient(transport, on: try DeviceLifecycle())
        var first = client.updates().makeAsyncIterator()
        #expect(try await first.next()?.revision == 1)
        try await Self.eventually("the stream open") { transport.opened.withLock { $0 } == 1 }
        let fetches = sesame.count("/v1/config")
        var second = client.updates().makeAsyncIterator()
        var third = client.updates().makeAsyncIterator()
        #expect(try await second.next()?.revision == 1)
        #expect(try await third.next()?.revision == 1)
        #expect(transport.opened.withLock { $0 } == 1)
        #expect(sesame.count("/v1/config") == fetches)

        // A publish reaches every observer through the one connection.
        Self.publishCheckout(sesame, down: transport)
        #expect(try await first.next()?.revision == 2)
        #expect(try await second.next()?.revision == 2)
        #expect(try await third.next()?.revision == 2)
        #expect(transport.opened.withLock { $0 } == 1)
    }

    @Test("current, before any fetch: the fallback on a first launch, the saved copy on the next; nil under a remembered kill switch")
    func currentBeforeTheFirstFetch() async throws {
        let device = try DeviceLifecycle()
        let sesame = ScriptedSesame()
        let fallback: [String: SesameConfig.Value] = ["mode": .string("safe")]
        let first = Self.viewClient(sesame, on: device, fallback: fallback)
        #expect(first.current?.source == .fallback && first.current?.string("mode") == "safe")
        let fetched = try await first.fetchConfig()
        #expect(first.current == fetched)

        let relaunch = Self.viewClient(sesame, on: device, fallback: fallback)
        #expect(relaunch.current?.source == .cache && relaunch.current?.string("api_keys.stripe") == "sk_live_1")

        device.advance(901)
        sesame.with { $0.killSwitchReason = "Update, please." }
        await #expect(throws: SesameError.versionDisabled(reason: "Update, please.")) { try await relaunch.fetchConfig(forceRefresh: true) }
        #expect(relaunch.current == nil)
        #expect(Self.viewClient(sesame, on: device, fallback: fallback).current == nil)
    }

    @Test("SesameLiveConfig starts from current and follows a publish, on the main actor")
    @MainActor
    func liveObjectOnTheMainActor() async throws {
        let device = try DeviceLifecycle()
        let sesame = ScriptedSesame()
        _ = try await Self.viewClient(sesame, on: device).fetchConfig()
        let transport = StreamingSesame(sesame, holdOpen: true, answer: Self.announceRevision)
        let client = Self.viewClient(transport, on: device)
        let live = SesameLiveConfig(client: client)
        // The first frame: the saved copy, synchronously.
        #expect(live.config?.source == .cache && live.string("api_keys.stripe", default: "") == "sk_live_1")
        try await Self.eventually("the stream open") { transport.opened.withLock { $0 } == 1 }
        Self.publishCheckout(sesame, down: transport)
        try await Self.eventually("the publish applied") { await MainActor.run { live.config?.revision == 2 } }
        #expect(live.bool("features.checkout", default: false))
        #expect(live.error == nil)
    }

    @Test("a kill switch pushed while a view watches: SesameLiveConfig says so, with the reason")
    @MainActor
    func liveObjectMeetsAKillSwitch() async throws {
        let (sesame, transport, live) = try await Self.watchingView()
        sesame.with { $0.killSwitchReason = "Update, please." }
        transport.push("event: version_disabled\ndata: {}\n\n")
        try await Self.eventually("the kill switch seen") { await MainActor.run { live.error != nil } }
        #expect(live.error?.killSwitchReason == "Update, please.")
    }

    @Test("SesameLiveConfig is Observable: a view that read its config is told of the next publish")
    @MainActor
    @available(iOS 17, macOS 14, *)
    func observable() async throws {
        let (sesame, transport, live) = try await Self.watchingView()
        let changed = Locked(false)
        withObservationTracking { _ = live.config } onChange: { changed.withLock { $0 = true } }
        #expect(!changed.withLock { $0 })
        Self.publishCheckout(sesame, down: transport)
        try await Self.eventually("Observation told of the change") { changed.withLock { $0 } }
        #expect(live.config?.revision == 2)
    }
}

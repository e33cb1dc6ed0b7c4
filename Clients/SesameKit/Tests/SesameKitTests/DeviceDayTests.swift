import Foundation
import SesameKitTesting
import Testing

@testable import SesameKit

/// SesameKit through what an iPhone does every day, played by `DeviceLifecycle` against the
/// scripted Sesame: a renewal cut by suspension, a lost reply, App Attest failing on the device,
/// the clock moved back, a kill switch met and then no network, a reinstall.
@Suite("SesameKit through an iPhone's day")
struct DeviceDayTests {
    struct Day {
        let device: DeviceLifecycle
        let sesame: ScriptedSesame
        let attest = FakeAppAttest()
        var fallback: [String: SesameConfig.Value]?

        init() throws {
            let device = try DeviceLifecycle()
            self.device = device
            sesame = ScriptedSesame(insideActivity: { device.backgroundActivitiesOpen > 0 })
        }

        /// The app launched (again): a new client on the same device.
        func launch() -> SesameClient {
            device.client(
                configuration: SesameClient.Configuration(
                    baseURL: URL(string: "https://sesame.example.com")!, teamID: "A1B2C3D4E5", bundleID: "com.example.app", appVersion: "2.1.3",
                    fallbackConfig: fallback),
                attestation: attest, transport: sesame)
        }

        /// Past the access token's lifetime: the next request renews.
        func accessTokenExpires() { device.advance(901) }
    }

    static func isNetworkError(_ error: any Error, mentioning words: String) -> Bool {
        guard case .network(let underlying) = error as? SesameError else { return false }
        return underlying.contains(words)
    }

    // MARK: Suspension and lost replies (item 1)

    @Test("a renewal runs as a background activity, so leaving the foreground mid-refresh does not cut it")
    func renewalInsideBackgroundActivity() async throws {
        let day = try Day()
        let client = day.launch()
        _ = try await client.fetchConfig()
        day.accessTokenExpires()
        _ = try await client.refetch(scope: [])
        #expect(day.sesame.with { $0.refreshesInsideActivity } == [true])
        #expect(day.device.backgroundActivities == ["SesameKit token renewal", "SesameKit token renewal"])
        #expect(day.device.backgroundActivitiesOpen == 0)
    }

    @Test("a refresh whose reply was lost (suspended, the network gone): the next launch presents the same token and keeps the key")
    func lostRefreshReply() async throws {
        let day = try Day()
        _ = try await day.launch().fetchConfig()
        day.accessTokenExpires()
        day.sesame.with { $0.loseNextRefreshReply = true }
        // Sesame rotated the token, the app never heard: the saved config stands in.
        let served = try await day.launch().refetch(scope: [])
        #expect(served.source == .cache)
        let relaunch = day.launch()
        #expect(try await relaunch.refetch(scope: []).source == .network)
        #expect(day.attest.state.withLock { ($0.generated, $0.attestCalls.count) } == (1, 1))
        #expect(day.sesame.count("/v1/auth/refresh") == 2)
    }

    // MARK: App Attest failing on the device (item 5)

    @Test("a refresh that lost a race over the key's counter, or whose challenge expired in suspension, is asked once more and keeps the key")
    func counterRaceRetries() async throws {
        for code in ["assertion_invalid", "invalid_challenge"] {
            let day = try Day()
            _ = try await day.launch().fetchConfig()
            day.accessTokenExpires()
            day.sesame.with { $0.refreshRefusalsOnce = [code] }
            #expect(try await day.launch().refetch(scope: []).source == .network)
            #expect(day.sesame.count("/v1/auth/refresh") == 2, "\(code)")
            #expect(day.sesame.count("/v1/auth/challenge") == 3, "\(code): one for the attestation, one per refresh")
            #expect(day.attest.state.withLock { $0.generated } == 1, "\(code)")
        }
        // Refused twice over the assertion: the key is given up for a new one.
        let day = try Day()
        _ = try await day.launch().fetchConfig()
        day.accessTokenExpires()
        day.sesame.with { $0.refreshRefusalsOnce = ["assertion_invalid", "assertion_invalid"] }
        _ = try await day.launch().refetch(scope: [])
        #expect(day.attest.state.withLock { ($0.generated, $0.attestCalls.count) } == (2, 2))
    }

    @Test("a key whose assertions keep failing on the device is given up after three failures in a row, across launches")
    func persistentAssertionFailures() async throws {
        let day = try Day()
        _ = try await day.launch().fetchConfig()
        let firstKey = try #require(try day.device.keychain.string(for: StoreKeys.keyID))
        day.attest.state.withLock { $0.assertionFailures = [AppAttestProviderError.systemFailure(code: 1), .invalidInput, .systemFailure(code: 1)] }
        for failure in 1...2 {
            day.accessTokenExpires()
            // Each launch's renewal fails: it says which App Attest step failed, and the key is kept.
            await #expect {
                _ = try await day.launch().accessToken()
            } throws: { Self.isNetworkError($0, mentioning: "App Attest could not sign with the key") }
            #expect(try day.device.keychain.string(for: StoreKeys.keyID) == firstKey, "after failure \(failure)")
        }
        // The third in a row: a new key, attested, and the app goes on.
        #expect(try await day.launch().refetch(scope: []).source == .network)
        let secondKey = try #require(try day.device.keychain.string(for: StoreKeys.keyID))
        #expect(secondKey != firstKey)
        #expect(day.attest.state.withLock { ($0.generated, $0.attestCalls.count) } == (2, 2))
        #expect(try day.device.keychain.data(for: StoreKeys.keyFailures) == nil)
    }

    @Test("a success between failures starts the count over: two failures, a success, two failures keep the key")
    func failuresCountInARow() async throws {
        let day = try Day()
        _ = try await day.launch().fetchConfig()
        let key = try day.device.keychain.string(for: StoreKeys.keyID)
        for _ in 0..<2 {
            day.attest.state.withLock { $0.assertionFailures = [AppAttestProviderError.systemFailure(code: 1), .systemFailure(code: 1)] }
            for _ in 0..<2 {
                day.accessTokenExpires()
                _ = try? await day.launch().accessToken()
            }
            day.accessTokenExpires()
            _ = try await day.launch().accessToken()
        }
        #expect(try day.device.keychain.string(for: StoreKeys.keyID) == key)
        #expect(day.attest.state.withLock { $0.generated } == 1)
    }

    @Test("a key that cannot be created says so, as App Attest's failure, not the Keychain's")
    func generateKeyFailure() async throws {
        let day = try Day()
        day.attest.state.withLock { $0.generateKeyFailures = [AppAttestProviderError.systemFailure(code: 2)] }
        await #expect {
            _ = try await day.launch().fetchConfig()
        } throws: { Self.isNetworkError($0, mentioning: "App Attest could not create a key: a failure on this device (DCError code 2)") }
        #expect(try await day.launch().fetchConfig().source == .network)
    }

    // MARK: The clock (item 6)

    @Test("the clock set back a day: a saved config is not fresh for ever; the next fetch asks Sesame and meets its kill switch")
    func clockSetBack() async throws {
        let day = try Day()
        day.sesame.with { $0.refreshAfter = 3600 }
        let client = day.launch()
        _ = try await client.fetchConfig()
        day.device.setClock(by: -86_400)
        day.sesame.with { $0.killSwitchReason = "Update, please." }
        await #expect(throws: SesameError.versionDisabled(reason: "Update, please.")) { try await client.fetchConfig() }
    }

    @Test("ages count the time the device was up: set back by half an hour, a config an hour old is not fresh")
    func uptimeMeasuresAge() async throws {
        let day = try Day()
        day.sesame.with { $0.refreshAfter = 3600 }
        let client = day.launch()
        _ = try await client.fetchConfig()
        day.device.advance(3000)
        day.device.setClock(by: -1800)
        #expect(try await client.fetchConfig().source == .cache)
        day.device.advance(700)
        #expect(try await client.fetchConfig().source == .network)
        #expect(day.sesame.count("/v1/config") == 2)
    }

    @Test("the clock set back across a restart, offline: the saved config's age is unknown, so it is not served")
    func clockSetBackAcrossRestart() async throws {
        var day = try Day()
        _ = try await day.launch().fetchConfig()
        day.device.restart()
        day.device.setClock(by: -86_400)
        day.sesame.with { $0.offline = true }
        await #expect(throws: SesameError.staleCacheExpired) { try await day.launch().fetchConfig() }
        day.fallback = ["mode": .string("safe")]
        #expect(try await day.launch().fetchConfig().source == .fallback)
    }

    // MARK: Kill switches offline (item 6)

    @Test("a kill switch is remembered: offline, neither the fallback nor a saved config is served until Sesame lifts it")
    func killSwitchRemembered() async throws {
        var day = try Day()
        day.fallback = ["mode": .string("safe")]
        _ = try await day.launch().fetchConfig()
        day.accessTokenExpires()
        day.sesame.with { $0.killSwitchReason = "Update, please." }
        await #expect(throws: SesameError.versionDisabled(reason: "Update, please.")) { try await day.launch().refetch(scope: []) }
        day.sesame.with { $0.offline = true }
        await #expect(throws: SesameError.versionDisabled(reason: "Update, please.")) { try await day.launch().fetchConfig() }
        // Lifted: Sesame serves the version again, and offline the saved config serves once more.
        day.sesame.with {
            $0.offline = false
            $0.killSwitchReason = nil
        }
        #expect(try await day.launch().fetchConfig().source == .network)
        day.sesame.with { $0.offline = true }
        #expect(try await day.launch().refetch(scope: []).source == .cache)
    }

    // MARK: Reinstall (item 6)

    @Test("deleted and installed again: the Keychain's old items are cleared at the first use, so a new key is attested; a relaunch is not a reinstall")
    func reinstall() async throws {
        let day = try Day()
        day.sesame.with { $0.refreshAfter = 3600 }
        _ = try await day.launch().fetchConfig()
        let firstKey = try day.device.keychain.string(for: StoreKeys.keyID)
        // A relaunch keeps everything: the fresh saved config is served without asking.
        #expect(try await day.launch().fetchConfig().source == .cache)
        try day.device.reinstall()
        let reinstalled = try await day.launch().fetchConfig()
        #expect(reinstalled.source == .network)
        #expect(try day.device.keychain.string(for: StoreKeys.keyID) != firstKey)
        #expect(day.attest.state.withLock { $0.attestCalls.count } == 2)
        #expect(day.sesame.count("/v1/auth/refresh") == 0)
    }
}

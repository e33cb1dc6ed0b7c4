import Crypto
import Foundation
import SesameKitTesting
import SesameVault
import Testing

@testable import SesameKit

/// A scripted Sesame and an app on a device (`DeviceLifecycle`): its Keychain, its clock (sleeps
/// only recorded), its launches.
struct Harness {
    let sesame = ScriptedSesame()
    let attest: FakeAppAttest
    let device = try! DeviceLifecycle()
    var cachePolicy = SesameClient.CachePolicy()
    var fallback: [String: SesameConfig.Value]?
    var password: String?

    init(attest: FakeAppAttest = FakeAppAttest()) { self.attest = attest }

    /// The device's Keychain.
    var store: InMemorySecureStore { device.keychain }

    /// The app launched (again): a new client on the device.
    func client(attestation: (any AppAttestProvider)? = nil, store: (any SecureStore)? = nil) -> SesameClient {
        device.client(
            configuration: SesameClient.Configuration(
                baseURL: URL(string: "https://sesame.example.com")!, teamID: "A1B2C3D4E5", bundleID: "com.example.app", appVersion: "2.1.3",
                cachePolicy: cachePolicy, fallbackConfig: fallback, zeroKnowledgePassword: password),
            attestation: attestation ?? attest, transport: sesame, store: store)
    }
}

@Suite("SesameClient against a scripted Sesame")
struct SesameClientTests {
    @Test("first launch: challenge, attest over SHA-256 of the nonce bytes, fetch with the access token; the key id is kept")
    func firstLaunch() async throws {
        let harness = Harness()
        let config = try await harness.client().fetchConfig()
        #expect(harness.sesame.requestPaths == ["/v1/auth/challenge", "/v1/auth/attest", "/v1/config"])
        #expect(config.string("api_keys.stripe") == "sk_live_1")
        #expect(config.bool("features.x") == true)
        #expect(config.int("limits.n") == 5)
        #expect(config.source == .network && !config.isStale && config.revision == 1 && config.matchedPattern == "*")
        let keyID = try #require(try harness.store.string(for: StoreKeys.keyID))
        let call = try #require(harness.attest.state.withLock { $0.attestCalls.first })
        #expect(call.keyID == keyID)
        let config2 = try #require(harness.sesame.with { $0.requests.first { $0.url.path == "/v1/config" } })
        #expect(config2.headers["authorization"] == "Bearer access-1")
        #expect(config2.url.query?.contains("version=2.1.3") == true)
        // A new launch (a new client over the same store) refreshes instead of attesting again.
        let relaunch = harness.client()
        _ = try await relaunch.fetchConfig()
        await relaunch.waitForBackgroundRevalidation()
        #expect(harness.sesame.count("/v1/auth/attest") == 1)
        #expect(harness.sesame.count("/v1/auth/refresh") == 1)
        #expect(harness.attest.state.withLock { $0.assertions } == 1)
    }

    @Test("a fresh saved config is served without asking; past its freshness an unchanged one costs a 304")
    func freshness() async throws {
        let harness = Harness()
        harness.sesame.with { $0.refreshAfter = 60 }
        let client = harness.client()
        _ = try await client.fetchConfig()
        let cached = try await client.fetchConfig()
        #expect(cached.source == .cache && !cached.isStale)
        #expect(harness.sesame.count("/v1/config") == 1)
        harness.device.advance(61)
        harness.sesame.with { $0.refreshAfter = nil }
        let revalidated = try await client.fetchConfig()
        #expect(revalidated.source == .network && revalidated.string("api_keys.stripe") == "sk_live_1")
        let last = try #require(harness.sesame.with { $0.requests.last })
        #expect(last.headers["if-none-match"] == "\"1-etag\"")
        #expect(harness.sesame.count("/v1/config") == 2)
    }

    @Test("a launch serves its saved config at once and revalidates in the background; askSesameFirst waits instead")
    func launchRevalidation() async throws {
        var harness = Harness()
        harness.sesame.with { $0.refreshAfter = 60 }
        _ = try await harness.client().fetchConfig()
        harness.device.advance(61)
        harness.sesame.with { $0.refreshAfter = 600 }
        let launch = harness.client()
        let first = try await launch.fetchConfig()
        #expect(first.source == .cache && first.isStale && first.string("api_keys.stripe") == "sk_live_1")
        await launch.waitForBackgroundRevalidation()
        #expect(harness.sesame.count("/v1/config") == 2)
        let revalidated = try #require(harness.sesame.with { $0.requests.last })
        #expect(revalidated.url.path == "/v1/config" && revalidated.headers["if-none-match"] == "\"1-etag\"")
        // Sesame's answer is what the launch's next fetch serves.
        harness.sesame.with {
            $0.config = #"{"api_keys":{"stripe":"sk_live_2"}}"#
            $0.revision = 2
        }
        harness.device.advance(601)
        let second = try await launch.fetchConfig()
        #expect(second.source == .network && second.string("api_keys.stripe") == "sk_live_2")

        // A kill switch met in the background: this fetch got the saved copy, the next one the reason.
        harness.device.advance(601)
        harness.sesame.with { $0.killSwitchReason = "Update, please." }
        let killed = harness.client()
        #expect(try await killed.fetchConfig().source == .cache)
        await killed.waitForBackgroundRevalidation()
        #expect(harness.store.keys.filter { $0.hasPrefix("sesame.config.2.1.3") }.isEmpty)
        await #expect(throws: SesameError.versionDisabled(reason: "Update, please.")) { try await killed.fetchConfig() }

        // askSesameFirst: the first fetch of a launch meets the kill switch itself.
        harness.sesame.with { $0.killSwitchReason = nil }
        _ = try await harness.client().fetchConfig()
        harness.device.advance(601)
        harness.sesame.with { $0.killSwitchReason = "Update, please." }
        harness.cachePolicy.atLaunch = .askSesameFirst
        await #expect(throws: SesameError.versionDisabled(reason: "Update, please.")) { try await harness.client().fetchConfig() }
    }

    @Test("an answer that left Sesame before a kill switch and arrives after it does not save the killed version again")
    func lateAnswerAfterKillSwitch() async throws {
        let harness = Harness()
        _ = try await harness.client().fetchConfig()
        let launch = harness.client()
        // The launch's background revalidation is answered 200 now and arrives late; meanwhile the
        // switch is thrown and the app's next fetch meets it.
        harness.sesame.with { $0.nextConfigAnswerDelay = .milliseconds(300) }
        #expect(try await launch.fetchConfig().source == .cache)
        try await Task.sleep(for: .milliseconds(50))
        harness.sesame.with { $0.killSwitchReason = "Update, please." }
        await #expect(throws: SesameError.versionDisabled(reason: "Update, please.")) { try await launch.fetchConfig() }
        await launch.waitForBackgroundRevalidation()
        #expect(harness.sesame.count("/v1/config") == 3)
        #expect(harness.store.keys.filter { $0.hasPrefix("sesame.config.2.1.3") }.isEmpty)
        harness.sesame.with { $0.offline = true }
        await #expect(throws: SesameError.self) { try await harness.client().fetchConfig() }
    }

    @Test("offline: a stale config is served as the policy says (.useSilently unmarked, .failHard not at all); past maxStaleness it has expired whatever the policy")
    func offline() async throws {
        var harness = Harness()
        harness.cachePolicy = SesameClient.CachePolicy(maxStaleness: .seconds(3600), onStaleConfig: .warnAndUse)
        _ = try await harness.client().fetchConfig()
        harness.sesame.with { $0.offline = true }
        let stale = try await harness.client().fetchConfig()
        #expect(stale.source == .cache && stale.isStale && stale.string("api_keys.stripe") == "sk_live_1")
        harness.cachePolicy.onStaleConfig = .useSilently
        let silent = try await harness.client().fetchConfig()
        #expect(silent.source == .cache && !silent.isStale && silent.string("api_keys.stripe") == "sk_live_1")
        harness.cachePolicy.onStaleConfig = .failHard
        await #expect(throws: SesameError.staleCacheExpired) { try await harness.client().fetchConfig() }
        harness.cachePolicy.atLaunch = .askSesameFirst
        await #expect(throws: SesameError.staleCacheExpired) { try await harness.client().fetchConfig() }
        harness.fallback = ["mode": .string("safe")]
        let fallback = try await harness.client().fetchConfig()
        #expect(fallback.source == .fallback && fallback.string("mode") == "safe")
        // Past maxStaleness the cache has expired: no policy serves it.
        harness.device.advance(3601)
        harness.fallback = nil
        for policy in [SesameClient.StaleConfigBehavior.warnAndUse, .useSilently, .failHard] {
            harness.cachePolicy.onStaleConfig = policy
            await #expect(throws: SesameError.staleCacheExpired) { try await harness.client().fetchConfig() }
        }
        harness.fallback = ["mode": .string("safe")]
        let expired = try await harness.client().fetchConfig()
        #expect(expired.source == .fallback && expired.string("mode") == "safe")
    }

    @Test("nothing saved and no network: a network error, or the fallback when there is one")
    func offlineFirstLaunch() async throws {
        var harness = Harness()
        harness.sesame.with { $0.offline = true }
        await #expect {
            try await harness.client().fetchConfig()
        } throws: { error in
            if case .network = error as? SesameError { return true }
            return false
        }
        harness.fallback = ["mode": .string("safe")]
        #expect(try await harness.client().fetchConfig().source == .fallback)
    }

    @Test("a kill switch surfaces the reason and purges every saved config of the version, whatever its scope")
    func killSwitch() async throws {
        let harness = Harness()
        let client = harness.client()
        _ = try await client.fetchConfig()
        _ = try await client.fetchConfig(scope: ["api_keys.stripe"])
        harness.sesame.with { $0.killSwitchReason = "Please update from the App Store." }
        await #expect(throws: SesameError.versionDisabled(reason: "Please update from the App Store.")) { try await client.fetchConfig() }
        #expect(harness.store.keys.filter { $0.hasPrefix("sesame.config.2.1.3") }.isEmpty)
        // Offline afterwards: nothing of the disabled version is served; the kill switch is remembered.
        harness.sesame.with { $0.offline = true }
        await #expect(throws: SesameError.versionDisabled(reason: "Please update from the App Store.")) {
            try await client.fetchConfig(scope: ["api_keys.stripe"])
        }
    }

    @Test("many callers needing a token at once share one refresh and one assertion")
    func singleFlight() async throws {
        let harness = Harness()
        _ = try await harness.client().fetchConfig()
        harness.sesame.with { $0.refreshDelay = .milliseconds(50) }
        let client = harness.client()
        try await withThrowingTaskGroup(of: SesameConfig.self) { group in
            for index in 0..<20 { group.addTask { try await client.fetchConfig(scope: ["limits.n", "k\(index)"]) } }
            for try await config in group { #expect(config.int("limits.n") == 5) }
        }
        #expect(harness.sesame.count("/v1/auth/refresh") == 1)
        #expect(harness.attest.state.withLock { $0.assertions } == 1)
        #expect(harness.sesame.count("/v1/auth/attest") == 1)
    }

    @Test("an emergency revocation: the next fetch re-attests with a new key, with nothing for the app to do")
    func revocation() async throws {
        let harness = Harness()
        let client = harness.client()
        _ = try await client.fetchConfig()
        let firstKey = try harness.store.string(for: StoreKeys.keyID)
        harness.sesame.with { state in
            state.revokedAccess = state.accessTokens
            state.refreshRefusal = "token_revoked"
        }
        let config = try await client.fetchConfig()
        #expect(config.source == .network)
        harness.sesame.with { $0.refreshRefusal = nil }
        let secondKey = try harness.store.string(for: StoreKeys.keyID)
        #expect(secondKey != nil && secondKey != firstKey)
        #expect(harness.sesame.count("/v1/auth/attest") == 2)
    }

    @Test("a reused refresh token (a thief got there first) leads to a new key and a new attestation")
    func reusedRefreshToken() async throws {
        let harness = Harness()
        _ = try await harness.client().fetchConfig()
        harness.sesame.with { $0.refreshTokens = [:] }
        let relaunch = harness.client()
        _ = try await relaunch.fetchConfig()
        await relaunch.waitForBackgroundRevalidation()
        #expect(try await relaunch.fetchConfig().source == .network)
        #expect(harness.sesame.count("/v1/auth/attest") == 2)
        #expect(harness.attest.state.withLock { $0.generated } == 2)
    }

    @Test("429 with Retry-After: rateLimited, and Sesame is not asked again until the wait is over")
    func rateLimited() async throws {
        let harness = Harness()
        let client = harness.client()
        harness.sesame.with { $0.retryAfter429 = 30 }
        await #expect { try await client.fetchConfig() } throws: { error in
            guard case .rateLimited(let wait) = error as? SesameError else { return false }
            return wait >= .seconds(30) && wait < .seconds(31)
        }
        let asked = harness.sesame.count("/v1/config")
        _ = try? await client.fetchConfig()
        #expect(harness.sesame.count("/v1/config") == asked)
        harness.device.advance(32)
        harness.sesame.with { $0.retryAfter429 = nil }
        #expect(try await client.fetchConfig().source == .network)
    }

    @Test("503 serves the saved config instead of failing")
    func unavailable() async throws {
        let harness = Harness()
        let client = harness.client()
        _ = try await client.fetchConfig()
        harness.sesame.with { $0.status503 = true }
        let served = try await client.fetchConfig()
        #expect(served.source == .cache && served.isStale)
    }

    @Test("App Attest unavailable: the same key is tried again after a wait; a key that will not attest is replaced once")
    func attestationRetries() async throws {
        let harness = Harness()
        harness.attest.state.withLock { $0.attestFailures = [.serverUnavailable] }
        _ = try await harness.client().fetchConfig()
        let calls = harness.attest.state.withLock { $0.attestCalls }
        // Apple's guidance: the same key and the same clientDataHash, so one challenge.
        #expect(calls.count == 2 && calls[0].keyID == calls[1].keyID && calls[0].clientDataHash == calls[1].clientDataHash)
        #expect(harness.sesame.count("/v1/auth/challenge") == 1)
        #expect(harness.device.sleeps == [.seconds(2)])

        // A failure that is not the key's (a malformed call, a system failure) keeps the key for the next try.
        for failure in [AppAttestProviderError.invalidInput, .systemFailure(code: 0)] {
            let kept = Harness()
            kept.attest.state.withLock { $0.attestFailures = [failure] }
            await #expect {
                try await kept.client().fetchConfig()
            } throws: { error in
                if case .network = error as? SesameError { return true }
                return false
            }
            let keyID = try #require(try kept.store.string(for: StoreKeys.keyID))
            _ = try await kept.client().fetchConfig()
            #expect(kept.attest.state.withLock { $0.attestCalls.map(\.keyID) } == [keyID, keyID])
        }

        let other = Harness()
        other.attest.state.withLock { $0.attestFailures = [.invalidKey] }
        _ = try await other.client().fetchConfig()
        let replaced = other.attest.state.withLock { $0.attestCalls }
        #expect(replaced.count == 2 && replaced[0].keyID != replaced[1].keyID)
    }

    @Test("a device without App Attest: unsupportedDevice unless the app admits it, then the unattested tier, told what was withheld")
    func unsupported() async throws {
        let harness = Harness(attest: FakeAppAttest(supported: false))
        await #expect(throws: SesameError.unsupportedDevice) { try await harness.client().fetchConfig() }
        #expect(harness.sesame.count("/v1/auth/attest") == 0)
        #expect(harness.sesame.count("/v1/config") == 0)

        harness.sesame.with {
            $0.admitUnattested = true
            $0.openKeys = ["features"]
        }
        let config = try await harness.client().fetchConfig()
        #expect(config.tier == .unattested && config.withheld == ["api_keys", "limits"])
        #expect(config.bool("features.x") == true && config.string("api_keys.stripe") == nil)
        // The refused ask, then the admitted one; never an attestation.
        #expect(harness.sesame.count("/v1/auth/unattested") == 2 && harness.sesame.count("/v1/auth/attest") == 0)
        // No refresh token for this tier: nothing is kept that a refresh would need.
        #expect(try harness.store.data(for: StoreKeys.refreshToken) == nil)
    }

    @Test("an assertion for an action: the attested key signs the data's hash, attesting first; none without App Attest or with a debug token")
    func assertionForAction() async throws {
        let harness = Harness()
        let order = Data(#"{"sku":"gold"}"#.utf8)
        let signed = try await harness.client().assertion(for: order)
        #expect(harness.sesame.count("/v1/auth/attest") == 1)
        #expect(signed.keyID == (try harness.store.string(for: StoreKeys.keyID)))
        #expect(signed.assertion == FakeAppAttest.assertion(keyID: signed.keyID, clientDataHash: Data(SHA256.hash(data: order))))
        #expect(signed.clientData == order && signed.verificationBody["clientData"] == order.base64EncodedString())
        #expect(signed.headers == ["X-App-Attest-Key-Id": signed.keyID, "X-App-Attest-Assertion": signed.assertion.base64EncodedString()])

        let unsupported = Harness(attest: FakeAppAttest(supported: false))
        await #expect(throws: SesameError.unsupportedDevice) { try await unsupported.client().assertion(for: order) }
        let debug = harness.client(attestation: DebugTokenAttest(token: "sesame_debug_ci"))
        await #expect(throws: SesameError.unsupportedDevice) { try await debug.assertion(for: order) }
    }

    @Test("DebugTokenAttest exchanges its token for the debug tier, and again when Sesame refuses the access token")
    func debugToken() async throws {
        let harness = Harness()
        harness.sesame.with {
            $0.debugTokens = ["sesame_debug_ci"]
            $0.openKeys = ["features", "limits"]
        }
        let client = harness.client(attestation: DebugTokenAttest(token: "sesame_debug_ci"))
        let config = try await client.fetchConfig()
        #expect(config.tier == .debug && config.withheld == ["api_keys"] && config.int("limits.n") == 5)
        let exchange = try #require(harness.sesame.with { $0.requests.first { $0.url.path == "/v1/auth/debug" } })
        let body = try #require(try JSONSerialization.jsonObject(with: exchange.body ?? Data()) as? [String: String])
        #expect(body["debugToken"] == "sesame_debug_ci" && body["bundleId"] == "com.example.app" && body["appVersion"] == "2.1.3")
        #expect(harness.sesame.count("/v1/auth/attest") == 0 && harness.attest.state.withLock { $0.generated } == 0)

        // The access token expires (or is refused): the debug token is exchanged again.
        harness.sesame.with { $0.accessTokens = [] }
        #expect(try await client.fetchConfig().source == .network)
        #expect(harness.sesame.count("/v1/auth/debug") == 2)
        // A revoked debug token is Sesame's refusal, surfaced as such.
        harness.sesame.with {
            $0.accessTokens = []
            $0.debugTokens = []
        }
        await #expect(throws: SesameError.server(code: "debug_token_invalid", message: "refused")) { try await client.fetchConfig() }
    }

    @Test("a secure store that cannot be read (a locked Keychain) is reported as such, and nothing is sent")
    func lockedStore() async throws {
        struct LockedStore: SecureStore {
            struct Locked: Error, CustomStringConvertible { var description: String { "errSecInteractionNotAllowed" } }
            func data(for key: String) throws -> Data? { throw Locked() }
            func set(_ data: Data, for key: String) throws { throw Locked() }
            func remove(_ key: String) throws { throw Locked() }
        }
        let harness = Harness()
        let client = harness.client(store: LockedStore())
        await #expect(throws: SesameError.secureStore("errSecInteractionNotAllowed")) { try await client.fetchConfig() }
        #expect(harness.sesame.requestPaths.isEmpty)
    }

    @Test("no config published: noConfig")
    func noConfig() async throws {
        let harness = Harness()
        harness.sesame.with { $0.config = nil }
        await #expect(throws: SesameError.noConfig) { try await harness.client().fetchConfig() }
    }

    @Test("a scope is read by Sesame's rules on the device too: spaces trimmed, overlapping paths merged; one Sesame would refuse is refused before anything is sent")
    func scopeOnTheDevice() async throws {
        var harness = Harness()
        let envelope = try VaultEnvelope.seal(
            Data(#"{"api_keys":{"stripe":"sk_zk","other":"x"},"features":{"a":true}}"#.utf8), password: "pw", cost: .init(n: 1 << 10, r: 8, p: 1))
        harness.sesame.with { state in
            state.config = String(decoding: try! envelope.encoded(), as: UTF8.self)
            state.zeroKnowledge = true
        }
        harness.password = "pw"
        let config = try await harness.client().fetchConfig(scope: [" api_keys.stripe ", "features", "features.a", "missing.path"])
        #expect(config.values.keys.sorted() == ["api_keys", "features"])
        #expect(config.string("api_keys.stripe") == "sk_zk")
        #expect(config.value("api_keys.other") == nil)
        #expect(config.bool("features.a") == true)

        let requests = harness.sesame.with { $0.requests.count }
        for invalid in [["api_keys..stripe"], [""], Array(repeating: "a", count: 101), [String(repeating: "a", count: 201)]] {
            await #expect { try await harness.client().fetchConfig(scope: invalid) } throws: { ($0 as? SesameError)?.code == "invalid_scope" }
        }
        #expect(harness.sesame.with { $0.requests.count } == requests, "an invalid scope reached Sesame")
    }

    @Test("zero knowledge: the envelope is opened with the password, and the scope is applied here, never sent again")
    func zeroKnowledge() async throws {
        var harness = Harness()
        let envelope = try VaultEnvelope.seal(
            Data(#"{"api_keys":{"stripe":"sk_zk"},"other":1}"#.utf8), password: "correct horse", cost: .init(n: 1 << 10, r: 8, p: 1))
        harness.sesame.with { state in
            state.config = String(decoding: try! envelope.encoded(), as: UTF8.self)
            state.zeroKnowledge = true
        }
        await #expect { try await harness.client().fetchConfig() } throws: { error in
            if case .zeroKnowledgeConfig = error as? SesameError { return true }
            return false
        }
        harness.password = "correct horse"
        let config = try await harness.client().fetchConfig(scope: ["api_keys.stripe"])
        #expect(config.string("api_keys.stripe") == "sk_zk")
        #expect(config.value("other") == nil)
        // Known to be zero-knowledge now: the next fetch does not offer Sesame a scope it must refuse.
        let refusals = harness.sesame.with { $0.requests.filter { $0.url.query?.contains("scope=") == true }.count }
        _ = try await harness.client().fetchConfig(scope: ["api_keys.stripe"])
        #expect(harness.sesame.with { $0.requests.filter { $0.url.query?.contains("scope=") == true }.count } == refusals)
        harness.password = "wrong"
        await #expect { try await harness.client().fetchConfig() } throws: { error in
            if case .zeroKnowledgeConfig = error as? SesameError { return true }
            return false
        }
    }

    @Test("nothing secret is kept outside the store: tokens and configs never reach the request log in the clear but where sent")
    func storeHoldsOnlyWhatItMust() async throws {
        let harness = Harness()
        _ = try await harness.client().fetchConfig()
        #expect(Set(harness.store.keys) == [StoreKeys.keyID, StoreKeys.refreshToken, "sesame.config.2.1.3", StoreKeys.configIndex])
        // The access token lives in memory only.
        for key in harness.store.keys {
            #expect(!(String(decoding: try harness.store.data(for: key) ?? Data(), as: UTF8.self).contains("access-1")))
        }
    }
}

@Suite("SesameClient's ready notification")
struct ReadyNotificationTests {
    /// The notifications a client posted, as an observer on another thread sees them.
    final class Observed: Sendable {
        let configs = Locked<[SesameConfig]>([])
    }

    @Test("posted once, with the config, when the first fetch returns; not on a failed fetch and not again")
    func postedOnceWithTheConfig() async throws {
        var harness = Harness()
        harness.cachePolicy = SesameClient.CachePolicy(atLaunch: .askSesameFirst)
        let client = harness.client()
        let observed = Observed()
        let token = NotificationCenter.default.addObserver(forName: SesameClient.readyNotification, object: client, queue: nil) { note in
            if let config = note.userInfo?[SesameClient.configKey] as? SesameConfig { observed.configs.withLock { $0.append(config) } }
        }
        defer { NotificationCenter.default.removeObserver(token) }

        harness.sesame.with { $0.offline = true }
        await #expect(throws: SesameError.self) { try await client.fetchConfig() }
        #expect(observed.configs.withLock { $0.isEmpty }, "a failed fetch is not readiness")
        harness.sesame.with { $0.offline = false }

        let config = try await client.fetchConfig()
        _ = try await client.fetchConfig()
        let posted = observed.configs.withLock { $0 }
        #expect(posted.count == 1)
        #expect(posted.first?.string("api_keys.stripe") == config.string("api_keys.stripe") && posted.first?.revision == config.revision)
    }
}

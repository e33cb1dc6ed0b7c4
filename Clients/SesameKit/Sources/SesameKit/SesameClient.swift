import Foundation
import SesameScope
import SesameVault

/// The app's connection to Sesame: proves the app genuine with App Attest, keeps its tokens, and
/// fetches its config, saved for launches without a network.
///
/// ```swift
/// let client = SesameClient(
///     configuration: SesameClient.Configuration(baseURL: url, teamID: "A1B2C3D4E5", bundleID: "com.example.app", appVersion: "2.1.3"),
///     attestation: DeviceCheckAppAttest(), store: SesameKeychainStore())
/// let config = try await client.fetchConfig(scope: ["api_keys.stripe"])
/// let stripeKey = config.string("api_keys.stripe")
/// ```
public actor SesameClient {
    /// What the client was made with.
    public nonisolated let configuration: Configuration
    let api: SesameAPI
    let tokens: TokenSession
    private let store: any SecureStore
    let clock: ClientClock
    /// Until when Sesame asked not to be asked (`Retry-After` on 429 or 503).
    private var quietUntil: Date?
    /// The saved configs this launch has asked Sesame about (store keys); before that, a saved copy
    /// past its freshness is served at once (`CachePolicy.atLaunch`).
    private var askedThisLaunch: Set<String> = []
    /// The background revalidations started and not yet awaited.
    private var revalidations: [Task<Void, Never>] = []
    /// How many times a kill switch has purged this version, and the last reason given: an answer
    /// that was under way meanwhile (a revalidation, a replica the switch had not reached) is
    /// older news and must not save the killed version's config again.
    private var versionPurges = 0
    private var disabledReason = ""
    /// The kill switches remembered in the store, as last read or written (nil: not read yet).
    private var knownKillSwitches: [String: String]?
    /// The live configs being followed, by scope: one connection each, however many observers.
    nonisolated let liveConfigs = Locked<[String: ConfigEmitter]>([:])
    /// The whole config last fetched or pushed, for `current`.
    private nonisolated let latest = Locked<SesameConfig?>(nil)

    /// A client for the app `configuration` describes.
    /// - Parameters:
    ///   - attestation: `DeviceCheckAppAttest()` in the app; `SoftwareAppAttest` in tests.
    ///   - store: `SesameKeychainStore()` in the app; `InMemorySecureStore()` in tests.
    ///   - transport: how requests travel; `URLSessionTransport()` unless a test scripts them.
    public init(
        configuration: SesameClient.Configuration, attestation: any AppAttestProvider, store: any SecureStore,
        transport: any HTTPTransport = URLSessionTransport()
    ) {
        self.init(
            configuration: configuration, attestation: attestation, store: store, transport: transport, clock: ClientClock(),
            background: platformBackgroundActivity(), installMarker: ReinstallAwareStore.defaultMarker(bundleID: configuration.bundleID))
    }

    /// A client on a device the caller plays (`SesameKitTesting.DeviceLifecycle`, SesameKit's tests).
    /// - Parameters:
    ///   - background: how a token renewal asks for time to finish when the app leaves the foreground.
    ///   - installMarker: the first-run marker's file (deleted with the app); nil for no reinstall check.
    package init(
        configuration: SesameClient.Configuration, attestation: any AppAttestProvider, store: any SecureStore, transport: any HTTPTransport,
        clock: ClientClock, background: any BackgroundActivity = UnmanagedActivity(), installMarker: URL? = nil
    ) {
        let store: any SecureStore = installMarker.map { ReinstallAwareStore(store, marker: $0) } ?? store
        self.configuration = configuration
        self.api = SesameAPI(baseURL: configuration.baseURL, transport: transport)
        self.store = store
        self.clock = clock
        self.tokens = TokenSession(
            configuration: configuration, api: api, attestation: attestation, store: store, clock: clock, background: background)
    }

    /// The app's config at its version, or the part of it under the dot paths of `scope`.
    ///
    /// A saved copy Sesame said is still fresh is returned at once. So is, at a launch's first
    /// fetch, a stale saved copy (past its freshness, within `maxStaleness`), while Sesame is asked
    /// in the background (`CachePolicy.atLaunch`). Otherwise Sesame is asked (`If-None-Match`: an
    /// unchanged config costs a 304). When Sesame cannot be reached, answers 5xx or asks to wait,
    /// the saved copy is served as `CachePolicy` says: fresh as it is, stale as `onStaleConfig`
    /// says, expired (past `maxStaleness`) never; then `fallbackConfig`. Ages are measured so that
    /// setting the device's clock back does not make a saved copy younger, and a clock set back
    /// sends the fetch to Sesame.
    /// - Throws: `SesameError`. `versionDisabled(reason:)` purges every saved config of the version,
    ///   and is remembered: without a network it is thrown again (no saved or fallback config is
    ///   served) until Sesame serves this version once more.
    /// - Parameter forceRefresh: ask Sesame now whatever the saved copy's freshness (for the rare
    ///   decision that must see the newest config); served as above when Sesame cannot be reached.
    public func fetchConfig(scope: [String] = [], forceRefresh: Bool = false) async throws(SesameError) -> SesameConfig {
        _ = try Self.parsedScope(scope)
        let config = forceRefresh ? try await refetch(scope: scope) : try await fetchConfigOnce(scope: scope)
        remember(config, scope: scope)
        await announceReadyOnce(config)
        return config
    }

    /// Keeps `config` for `current` when it is the whole config, from Sesame or the saved copy.
    func remember(_ config: SesameConfig, scope: [String]) {
        guard scope.isEmpty, config.source != .fallback else { return }
        latest.withLock { $0 = config }
    }

    /// The config to show now, without waiting (a view's first frame): the whole config last
    /// fetched or pushed to this client; before any, the saved copy, as the cache policy allows
    /// serving it offline; else `fallbackConfig`. Nil when there is none, or a kill switch covers
    /// this version.
    public nonisolated var current: SesameConfig? {
        if let latest = latest.withLock({ $0 }) { return latest }
        if storedKillSwitches()[configuration.appVersion] != nil { return nil }
        if let saved = load(StoreKeys.config(version: configuration.appVersion, scope: [])), let served = try? servable(saved, scope: []) {
            return served
        }
        return configuration.fallbackConfig.map(Self.fallback)
    }

    private func fetchConfigOnce(scope: [String]) async throws(SesameError) -> SesameConfig {
        let key = StoreKeys.config(version: configuration.appVersion, scope: scope)
        let saved = load(key)
        let now = clock.now()
        if let saved, isFresh(saved) { return try config(from: saved, scope: scope, source: .cache, isStale: false) }
        let launchesFirstAsk = askedThisLaunch.insert(key).inserted
        if launchesFirstAsk, configuration.cachePolicy.atLaunch == .serveSavedAndRevalidate, let saved,
            case .stale(let marked) = usability(of: saved)
        {
            let served = try config(from: saved, scope: scope, source: .cache, isStale: marked)
            revalidations.append(Task { await self.revalidate(scope: scope, key: key) })
            return served
        }
        if let quietUntil, now < quietUntil {
            return try servedWithoutSesame(saved, scope: scope, because: .rateLimited(retryAfter: .seconds(quietUntil.timeIntervalSince(now))))
        }
        return try await fetchOrServeSaved(scope: scope, saved: saved, key: key)
    }

    /// Returns once every background revalidation started so far has finished; the next
    /// `fetchConfig` then serves what Sesame said. For tests (`SesameKitTesting` makes it public as
    /// `waitForBackgroundRevalidation()`); an app that needs the newest config before a decision
    /// that matters uses `fetchConfig(forceRefresh: true)`.
    package func backgroundRevalidationsFinished() async {
        while !revalidations.isEmpty {
            let started = revalidations
            revalidations.removeAll()
            for revalidation in started { await revalidation.value }
        }
    }

    /// Forgets what this install holds (sign-out, "erase my data"): the App Attest key id, the
    /// refresh token, the access token and every saved config. The next fetch attests a new key.
    /// (Apple offers no call to delete an App Attest key from the Secure Enclave; an unused one
    /// does no harm.) A kill switch met is kept: it covers the app's version, not its user.
    /// - Throws: `SesameError.secureStore` when the store cannot delete.
    public func reset() async throws(SesameError) {
        for revalidation in revalidations { revalidation.cancel() }
        revalidations.removeAll()
        askedThisLaunch.removeAll()
        quietUntil = nil
        latest.withLock { $0 = nil }
        do {
            try await tokens.forgetAll()
            for key in savedKeys() { try store.remove(key) }
            try store.remove(StoreKeys.configIndex)
        } catch {
            throw .secureStore(String(describing: error))
        }
    }

    // MARK: Readiness

    /// Whether this client has posted `SesameClient.readyNotification`.
    private var announcedReady = false

    /// Posted once per client (once per launch, for the shared one), on the main actor, when a
    /// `fetchConfig` first returns a config, whatever its source (Sesame, the saved copy, the
    /// fallback): screens that waited for configuration can show. `object` is the client; `userInfo[SesameClient.configKey]`
    /// the `SesameConfig` that fetch returned.
    public static let readyNotification = Notification.Name("SesameKit.SesameClient.ready")
    /// The `userInfo` key of the config in `readyNotification`.
    public static let configKey = "config"

    /// Posts `readyNotification` the first time, on the main actor, before the fetch returns.
    private func announceReadyOnce(_ config: SesameConfig) async {
        guard !announcedReady else { return }
        announcedReady = true
        await MainActor.run { NotificationCenter.default.post(name: Self.readyNotification, object: self, userInfo: [Self.configKey: config]) }
    }

    // MARK: Network

    /// Asks Sesame now, whatever the saved copy's freshness (live updates were told it changed);
    /// served as `fetchConfig` serves when Sesame cannot be reached.
    func refetch(scope: [String]) async throws(SesameError) -> SesameConfig {
        let key = StoreKeys.config(version: configuration.appVersion, scope: scope)
        let saved = load(key)
        askedThisLaunch.insert(key)
        return try await fetchOrServeSaved(scope: scope, saved: saved, key: key)
    }

    /// Asks Sesame; when it cannot be reached or asks to wait, serves `saved` as the cache policy says.
    private func fetchOrServeSaved(scope: [String], saved: SavedConfig?, key: String) async throws(SesameError) -> SesameConfig {
        do {
            return try await fetch(scope: scope, saved: saved, key: key)
        } catch {
            switch error {
            case .network, .rateLimited: return try servedWithoutSesame(saved, scope: scope, because: error)
            default: throw error
            }
        }
    }

    /// The ETag of the saved config for `scope`, if any.
    func savedETag(scope: [String]) -> String? {
        load(StoreKeys.config(version: configuration.appVersion, scope: scope))?.etag
    }

    /// An access token for a request SesameKit sends itself.
    func accessToken() async throws(SesameError) -> String {
        do { return try await tokens.accessToken() } catch let error as SesameError { throw error } catch {
            // Only the secure store throws anything else; its errors carry status codes, not secrets.
            throw .secureStore(String(describing: error))
        }
    }

    /// Sesame refused `token`: the next request gets a new one.
    func discard(_ token: String) async {
        await tokens.discard(token)
    }

    /// Asks Sesame about the saved config under `key`, saving what it answers. What goes wrong is
    /// not the app's concern now: the next fetch meets it (a kill switch has already purged).
    private func revalidate(scope: [String], key: String) async {
        if let quietUntil, clock.now() < quietUntil { return }
        _ = try? await fetch(scope: scope, saved: load(key), key: key)
    }

    private func fetch(scope: [String], saved: SavedConfig?, key: String) async throws(SesameError) -> SesameConfig {
        // A zero-knowledge config cannot be cut by Sesame: once known to be one, it is asked for whole.
        var sendScope = !scope.isEmpty && saved.map { (try? VaultEnvelope.decode($0.body)) == nil } ?? true
        for _ in 0..<2 {
            let purgesBefore = versionPurges
            var query = [URLQueryItem(name: "version", value: configuration.appVersion)]
            if sendScope { query.append(URLQueryItem(name: "scope", value: scope.joined(separator: ","))) }
            let response = try await authorized("GET", "v1/config", query: query, headers: saved?.etag.map { ["if-none-match": $0] } ?? [:])
            let now = clock.now()
            let uptime = clock.uptime()
            if (response.status == 200 || response.status == 304) && versionPurges != purgesBefore {
                throw .versionDisabled(reason: disabledReason)
            }
            switch response.status {
            case 200:
                guard let reply = ConfigReply(response.body) else {
                    throw .server(code: "invalid_response", message: "The config reply cannot be read.")
                }
                let fresh = SavedConfig(
                    body: reply.body, etag: response.headers["etag"], revision: reply.revision, matchedPattern: reply.matchedPattern,
                    confirmedAt: now, confirmedUptime: uptime, freshFor: reply.refreshAfter ?? maxAge(response.headers["cache-control"]) ?? 0, tier: reply.tier,
                    withheld: reply.withheld, rollout: reply.rollout)
                let served = try config(from: fresh, scope: scope, source: .network, isStale: false)
                save(fresh, as: key)
                liftKillSwitch()
                return served
            case 304:
                // Only ever an answer to our If-None-Match, so there is a saved copy to confirm.
                guard var confirmed = saved else { throw .server(code: "invalid_response", message: "Sesame confirmed a config this app does not hold.") }
                confirmed.confirmedAt = now
                confirmed.confirmedUptime = uptime
                confirmed.freshFor = maxAge(response.headers["cache-control"]) ?? 0
                save(confirmed, as: key)
                liftKillSwitch()
                return try config(from: confirmed, scope: scope, source: .network, isStale: false)
            default:
                break
            }
            let (code, message) = SesameAPI.refusal(of: response)
            switch (response.status, code) {
            case (403, "version_disabled"):
                disabledReason = message
                purgeVersion()
                remember(killSwitch: message)
                throw .versionDisabled(reason: message)
            case (404, "no_config"):
                remove(key)
                liftKillSwitch()
                throw .noConfig
            case (400, "scope_unavailable_zero_knowledge"):
                // Sesame cannot read it, so cannot cut it: fetch it whole and select here.
                sendScope = false
            case (503, _), (429, _):
                let wait = SesameAPI.retryAfter(of: response)
                if let wait { quietUntil = now.addingTimeInterval(TimeInterval(wait.components.seconds) + 1) }
                throw response.status == 429 ? .rateLimited(retryAfter: wait ?? .seconds(1)) : .network(underlying: "Sesame is unavailable (\(code))")
            default:
                throw TokenSession.failure(response, code: code, message: message)
            }
        }
        throw .server(code: "scope_unavailable_zero_knowledge", message: "Sesame refused the config with and without a scope.")
    }

    /// A request with the access token; a token Sesame refuses (expired, rotated out, revoked) is
    /// replaced and the request sent once more. Returns the first answer that is not a 401.
    func authorized(
        _ method: String, _ path: String, query: [URLQueryItem] = [], headers: [String: String] = [:], json: (any Encodable & Sendable)? = nil
    ) async throws(SesameError) -> HTTPExchange.Response {
        var response: HTTPExchange.Response?
        for _ in 0..<2 {
            let token = try await accessToken()
            var headers = headers
            headers["authorization"] = "Bearer " + token
            response = try await api.send(method, path, query: query, json: json, headers: headers)
            guard response?.status == 401 else { break }
            await tokens.discard(token)
        }
        guard let response else { throw .network(underlying: "no answer") }
        return response
    }

    // MARK: Serving without Sesame

    private func servedWithoutSesame(_ saved: SavedConfig?, scope: [String], because error: SesameError) throws(SesameError) -> SesameConfig {
        // A kill switch met before stands until Sesame is heard again: no fallback lifts it.
        if let reason = rememberedKillSwitch() { throw .versionDisabled(reason: reason) }
        if let saved, let served = try servable(saved, scope: scope) { return served }
        if let fallback = configuration.fallbackConfig { return Self.fallback(fallback) }
        throw saved == nil ? error : .staleCacheExpired
    }

    /// `saved` as it may be served without Sesame (marked stale as the policy says), or nil when it may not.
    private nonisolated func servable(_ saved: SavedConfig, scope: [String]) throws(SesameError) -> SesameConfig? {
        switch usability(of: saved) {
        case .fresh: try config(from: saved, scope: scope, source: .cache, isStale: false)
        case .stale(let marked): try config(from: saved, scope: scope, source: .cache, isStale: marked)
        case .unusable: nil
        }
    }

    /// How a saved config may be served while Sesame is not answering.
    private enum Usability {
        /// Within its freshness.
        case fresh
        /// Past its freshness, within `maxStaleness`: served, marked `isStale` unless the policy
        /// is `.useSilently`.
        case stale(marked: Bool)
        /// Past `maxStaleness` (the cache expired, whatever the policy), or past its freshness under `.failHard`.
        case unusable
    }

    private nonisolated func usability(of saved: SavedConfig) -> Usability {
        if isFresh(saved) { return .fresh }
        // An unknown age (the clock set back across a restart) counts as expired.
        guard let age = saved.age(now: clock.now(), uptime: clock.uptime()), .seconds(age) <= configuration.cachePolicy.maxStaleness else {
            return .unusable
        }
        switch configuration.cachePolicy.onStaleConfig {
        case .warnAndUse:
            SesameLog.warning("serving a saved config past its freshness (CachePolicy.onStaleConfig: .warnAndUse)")
            return .stale(marked: true)
        case .useSilently: return .stale(marked: false)
        case .failHard: return .unusable
        }
    }

    private nonisolated func isFresh(_ saved: SavedConfig) -> Bool { saved.isFresh(now: clock.now(), uptime: clock.uptime()) }

    private static func fallback(_ values: [String: SesameConfig.Value]) -> SesameConfig {
        SesameConfig(values: values, isStale: false, source: .fallback, revision: 0, matchedPattern: "")
    }

    // MARK: Reading a config

    /// The app's view of `saved`: a zero-knowledge config opened with the password, cut to `scope`.
    private nonisolated func config(from saved: SavedConfig, scope: [String], source: SesameConfig.Source, isStale: Bool) throws(SesameError) -> SesameConfig {
        var body = saved.body
        let envelope: VaultEnvelope?
        do { envelope = try VaultEnvelope.decode(body) } catch {
            throw .zeroKnowledgeConfig("the envelope is malformed (\(error))")
        }
        if let envelope {
            guard let password = configuration.zeroKnowledgePassword else {
                throw .zeroKnowledgeConfig("this config is encrypted; set SesameClient.Configuration.zeroKnowledgePassword")
            }
            do { body = try envelope.open(password: password) } catch { throw .zeroKnowledgeConfig(error.description) }
        }
        guard let values = try? JSONDecoder().decode([String: SesameConfig.Value].self, from: body) else {
            throw .server(code: "invalid_config", message: "The config is not a JSON object.")
        }
        let selected = try Self.parsedScope(scope).map { $0.selecting(from: values) } ?? values
        return SesameConfig(
            values: selected, isStale: isStale, source: source, revision: saved.revision, matchedPattern: saved.matchedPattern,
            tier: saved.tier ?? .attested, withheld: saved.withheld ?? [], rollout: saved.rollout)
    }

    /// `scope` by the rules Sesame applies (`ConfigScope`), so a scope selects the same members
    /// cut here (a saved or zero-knowledge config) as cut by Sesame; nil for the whole config.
    /// - Throws: `SesameError.server(code: "invalid_scope", …)`, what Sesame would answer, before
    ///   anything is sent.
    nonisolated static func parsedScope(_ scope: [String]) throws(SesameError) -> ConfigScope? {
        guard !scope.isEmpty else { return nil }
        do { return try ConfigScope(paths: scope) } catch {
            throw .server(code: "invalid_scope", message: "The scope is not valid: \(error.description).")
        }
    }

    // MARK: The saved configs

    private nonisolated func load(_ key: String) -> SavedConfig? {
        guard let data = try? store.data(for: key) else { return nil }
        return try? JSONDecoder().decode(SavedConfig.self, from: data)
    }

    private func save(_ config: SavedConfig, as key: String) {
        guard let data = try? JSONEncoder().encode(config) else { return }
        try? store.set(data, for: key)
        var index = savedKeys()
        if !index.contains(key) {
            index.append(key)
            try? store.set((try? JSONEncoder().encode(index)) ?? Data(), for: StoreKeys.configIndex)
        }
    }

    private func remove(_ key: String) {
        try? store.remove(key)
        let index = savedKeys().filter { $0 != key }
        try? store.set((try? JSONEncoder().encode(index)) ?? Data(), for: StoreKeys.configIndex)
    }

    /// Forgets every saved config of this version, whatever its scope: a switched-off version is
    /// never served from the cache again.
    private func purgeVersion() {
        versionPurges += 1
        latest.withLock { $0 = nil }
        let prefix = StoreKeys.config(version: configuration.appVersion, scope: [])
        for key in savedKeys() where key == prefix || key.hasPrefix(prefix + "?") { remove(key) }
    }

    // MARK: Kill switches remembered

    /// Keeps the reason of a kill switch over this version, so that a launch without a network
    /// still shows it (and serves neither a saved nor the fallback config) until Sesame lifts it.
    private func remember(killSwitch reason: String) {
        var switches = killSwitches()
        switches[configuration.appVersion] = reason
        saveKillSwitches(switches)
    }

    /// Sesame served this version: a kill switch remembered over it is lifted.
    private func liftKillSwitch() {
        var switches = killSwitches()
        guard switches.removeValue(forKey: configuration.appVersion) != nil else { return }
        saveKillSwitches(switches)
    }

    private func rememberedKillSwitch() -> String? { killSwitches()[configuration.appVersion] }

    private func killSwitches() -> [String: String] {
        if let knownKillSwitches { return knownKillSwitches }
        let switches = storedKillSwitches()
        knownKillSwitches = switches
        return switches
    }

    /// The kill switches as the store holds them (what `killSwitches()` remembers, and `current` reads).
    private nonisolated func storedKillSwitches() -> [String: String] {
        guard let data = try? store.data(for: StoreKeys.killSwitches) else { return [:] }
        return (try? JSONDecoder().decode([String: String].self, from: data)) ?? [:]
    }

    private func saveKillSwitches(_ switches: [String: String]) {
        knownKillSwitches = switches
        try? store.set((try? JSONEncoder().encode(switches)) ?? Data(), for: StoreKeys.killSwitches)
    }

    private func savedKeys() -> [String] {
        guard let data = try? store.data(for: StoreKeys.configIndex) else { return [] }
        return (try? JSONDecoder().decode([String].self, from: data)) ?? []
    }
}

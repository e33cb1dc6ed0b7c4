import AppAttestTesting
import AppleFake
import Synchronization
import DevSuite
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SesameKit
import SesameKitTesting

/// The walk's SesameKit steps: what an app using the SDK sees through the gateway, from its first
/// launch to the suite going away.
struct KitWalk: Sendable {
    let suite: LocalSuite
    let gateway: URL
    let authority: SoftwareAttestationAuthority
    let team: String
    let bundle: String
    let key: String
    /// What step 5 encrypted the `4.*` config with.
    let vaultPassword: String
    /// The authority as a PEM bundle, for `sesame-device`.
    let deviceAuthority: String
    /// Apple's servers (a fake the services are pointed at), the team's key they know, and an attester
    /// whose receipts they trade.
    let apple: WalkApple

    /// One install: its App Attest keys (the device) and its saved state (the Keychain).
    struct Install: Sendable {
        let device: SoftwareAppAttest
        let store = InMemorySecureStore()
    }

    func install() -> Install { Install(device: SoftwareAppAttest(appID: "\(team).\(bundle)", authority: authority)) }

    /// An install on the phone Apple knows as `phone`: each attest carries a DeviceCheck token of it.
    func install(onPhone phone: String) -> Install {
        let apple = self.apple.server
        return Install(
            device: SoftwareAppAttest(
                appID: "\(team).\(bundle)", authority: authority, deviceCheckTokens: { Data(base64Encoded: apple.deviceToken(for: phone)) }))
    }

    /// A launch of `install` at `version`: a new client over the same keys and store.
    func launch(_ install: Install, version: String, vaultPassword: String? = nil) -> SesameClient {
        SesameClient(
            configuration: SesameClient.Configuration(
                baseURL: gateway, teamID: team, bundleID: bundle, appVersion: version, zeroKnowledgePassword: vaultPassword),
            attestation: install.device, store: install.store)
    }

    /// Step 21: a relay to a fake LLM, made with the CLI, called with SesameKit's `relay(_:)`.
    private func relayedCompletion() async throws {
        let llm = FakeLLM()
        try await llm.run { upstream in
            let headersFile = FileManager.default.temporaryDirectory.appendingPathComponent("walk-relay-headers-\(UUID().uuidString).json")
            try Data(#"{"Authorization":"Bearer \#(FakeLLM.apiKey)"}"#.utf8).write(to: headersFile)
            defer { try? FileManager.default.removeItem(at: headersFile) }
            _ = try await suite.sesame(
                ["relays", "set", "llm", "--upstream", upstream.absoluteString, "--method", "POST", "--path", "/v1/chat/completions",
                 "--headers-file", headersFile.path, "--per-install-per-minute", "30"], key: key)

            let relay = launch(install(), version: "2.1.3").relay("llm")
            var request = URLRequest(url: relay.baseURL.appendingPathComponent("v1/chat/completions"))
            request.httpMethod = "POST"
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(#"{"model":"walk","stream":true,"messages":[{"role":"user","content":"hi"}]}"#.utf8)
            var answer: (body: AsyncThrowingStream<Data, any Error>, response: HTTPURLResponse)?
            // The relay reaches each delivery replica through the event bus.
            try await eventually("the relay is served", timeout: .seconds(10), every: .milliseconds(100)) {
                do {
                    answer = try await relay.bytes(for: request)
                    return true
                } catch let error as SesameError {
                    guard case .server(let code, _) = error, code == "relay_not_found" else { throw error }
                    return false
                }
            }
            guard let answer else { throw WalkFailure("no answer") }
            try expect(answer.response.statusCode == 200, "the relayed completion: \(answer.response.statusCode)")
            var chunks = answer.body.makeAsyncIterator()
            var text = ""
            while !text.contains("Hel"), let chunk = try await chunks.next() { text += String(decoding: chunk, as: UTF8.self) }
            // The fake LLM holds the rest until released: what arrived came before the answer ended.
            try expect(text.contains(#""content":"Hel""#) && !text.contains("[DONE]"), "the first words: \(text)")
            llm.finishOne()
            while let chunk = try await chunks.next() { text += String(decoding: chunk, as: UTF8.self) }
            let words = text.split(separator: "\n").compactMap { line -> String? in
                guard line.hasPrefix("data: {"), let object = try? JSONSerialization.jsonObject(with: Data(line.dropFirst(6).utf8)) as? [String: Any],
                    let choice = (object["choices"] as? [[String: Any]])?.first, let delta = choice["delta"] as? [String: Any] else { return nil }
                return delta["content"] as? String
            }
            try expect(words.joined() == FakeLLM.words.joined() && text.contains("data: [DONE]"), "the streamed answer: \(text)")
            guard let seen = llm.received.withLock({ $0.last }) else { throw WalkFailure("the fake LLM was not called") }
            try expect(seen["authorization"] == "Bearer \(FakeLLM.apiKey)" && seen["cookie"] == nil, "the provider saw: \(seen.keys.sorted())")

            let anonymous = try await HTTPClient(base: gateway).send(
                "POST", "/v1/relay/llm/v1/chat/completions", headers: ["Content-Type": "application/json"], body: request.httpBody)
            try expect(anonymous.status == 401 && anonymous.errorCode == "invalid_token", "without a token: \(anonymous.status)")
            try expect(llm.received.withLock { $0.count } == 1, "a refused call reached the provider")
            // The provider's key: in no service's log, nor the gateway's.
            let logs = try FileManager.default.contentsOfDirectory(atPath: suite.suite.layout.logs)
            for name in logs where name.hasSuffix(".log") {
                let log = try String(contentsOfFile: suite.suite.layout.logs + "/" + name, encoding: .utf8)
                try expect(!log.contains(FakeLLM.apiKey), "the provider's key is in \(name)")
            }
        }
    }

    func run(step: (Int, String, () async throws -> Void) async throws -> Void) async throws {
        let current = install(), updated = install()
        var keyID: Data?
        try await step(14, "SesameKit: first launch attests and fetches, scope narrows; a relaunch refreshes with an assertion") {
            let config = try await launch(current, version: "2.1.3").fetchConfig(scope: ["api_keys.stripe"])
            try expect(config.source == .network && config.matchedPattern == "2.*", "first launch: \(config.source) \(config.matchedPattern)")
            try expect(config.values.keys.sorted() == ["api_keys"] && config.string("api_keys.stripe") == "sk-2", "scoped: \(config.values)")
            keyID = try current.store.data(for: "sesame.appAttestKeyID")
            let relaunched = try await launch(current, version: "2.1.3").fetchConfig()
            try expect(relaunched.bool("features.chat") == true, "relaunch: \(relaunched.values)")
            try expect(try current.store.data(for: "sesame.appAttestKeyID") == keyID, "a relaunch made a new key")
            _ = try await launch(updated, version: "2.1.4").fetchConfig()
            // The operator's smoke test: sesame-device, a fresh software device, shows paths, not secrets.
            let smoke = try await suite.sesameDevice([
                "fetch", "--url", gateway.absoluteString, "--team-id", team, "--bundle-id", bundle, "--app-version", "2.1.3",
                "--authority", deviceAuthority,
            ])
            try expect(
                smoke.status == 0 && smoke.output.contains("pattern '2.*'") && smoke.output.contains("api_keys.stripe")
                    && !smoke.output.contains("sk-2"), "sesame-device fetch: \(smoke.status) \(smoke.output)")
            let sealed = try await launch(install(), version: "4.0", vaultPassword: vaultPassword).fetchConfig()
            try expect(sealed.string("openai") == "sk-live-e2e", "the zero-knowledge config opened on the device: \(sealed.values)")
        }
        try await step(15, "SesameKit: a kill switch gives versionDisabled(reason:) and purges that version's saved config") {
            let reason = "2.1.4 drops payments; update to 2.1.5"
            try await suite.sesame(["kill-switch", "--versions", "2.1.4", "--reason", reason], key: key)
            let client = launch(updated, version: "2.1.4")
            try await eventually("versionDisabled reaches the app") {
                do {
                    _ = try await client.fetchConfig()
                    return false
                } catch let error as SesameError {
                    return error == .versionDisabled(reason: reason)
                }
            }
            try expect(try updated.store.data(for: "sesame.config.2.1.4") == nil, "the killed version's config is still saved")
        }
        try await step(16, "SesameKit: an emergency revocation; the next fetch re-attests with a new key, nothing for the app to do") {
            try await Task.sleep(for: .seconds(1))  // tokens count by the second: the revocation must be later than these
            try await suite.sesame(["revoke", "--ver", "2.1.*"], key: key)
            let client = launch(current, version: "2.1.3")
            try await eventually("served again with a new key") {
                guard (try? await client.fetchConfig())?.source == .network else { return false }
                return try current.store.data(for: "sesame.appAttestKeyID") != keyID
            }
        }
        try await step(17, "a CI job with a debug token reads the flags opened to its tier and is told which keys were withheld; so does the README's quick start, built by URL") {
            let config = FileManager.default.temporaryDirectory.appendingPathComponent("sesame-e2e-tiers-\(UUID().uuidString).json")
            try Data(#"{"api_keys":{"stripe":"sk-5"},"features":{"chat":true,"checkout":true}}"#.utf8).write(to: config)
            defer { try? FileManager.default.removeItem(at: config) }
            _ = try await suite.sesame(["upload", "--file", config.path, "--ver", "5.*", "--tier", "features=debug"], key: key)
            let token = try await suite.sesame(["debug-tokens", "create", "--name", "e2e-ci", "--ttl", "1h"], key: key)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            try expect(token.hasPrefix("sesame_debug_"), "debug-tokens create printed \(token)")
            let arguments = [
                "fetch", "--url", gateway.absoluteString, "--team-id", team, "--bundle-id", bundle, "--app-version", "5.0", "--debug-token",
                "--show-values",
            ]
            var ci: (status: Int32, output: String) = (0, "")
            try await eventually("the tiered upload reaches delivery", every: .milliseconds(300)) {
                ci = try await suite.sesameDevice(arguments, extra: ["SESAME_DEBUG_TOKEN": token])
                return ci.status == 0 && ci.output.contains("pattern '5.*'")
            }
            try expect(
                ci.output.contains("tier debug") && ci.output.contains("features.chat = true")
                    && ci.output.contains("Withheld at this tier: api_keys") && !ci.output.contains("sk-5"), "sesame-device --debug-token: \(ci.output)")
            let audit = try await suite.sesame(["debug-tokens", "list"], key: key)
            try expect(audit.contains("e2e-ci"), "debug-tokens list: \(audit)")

            // The README's quick start, verbatim, as an app on this machine: `configure()` reads the
            // Info.plist and takes the debug token from the environment.
            let quick = try await suite.runQuickStart(
                info: [
                    "CFBundleIdentifier": bundle, "CFBundleShortVersionString": "5.0", "SesameBaseURL": gateway.absoluteString,
                    "SesameTeamID": team,
                ],
                extra: ["SESAME_DEBUG_TOKEN": token])
            try expect(quick.status == 0 && quick.output.contains("checkoutEnabled=true"), "the README's quick start: \(quick.status) \(quick.output)")
        }
        try await step(18, "a purchase protected by a single-use token and by an assertion, checked by the shop's backend with a backend key; replays refused") {
            _ = try await suite.sesame(["policy", "set", #"apiAudiences=["https://shop.example.com"]"#], key: key)
            let backendKey = try await suite.sesame(["backend-keys", "create", "--name", "shop"], key: key).trimmingCharacters(in: .whitespacesAndNewlines)
            try expect(backendKey.hasPrefix("bk_prod_"), "backend-keys create printed: \(backendKey)")
            let shop = HTTPClient(base: gateway)
            let order = Data(#"{"sku":"gold","quantity":1}"#.utf8)
            let client = launch(install(), version: "2.1.3")

            let token = try await client.limitedUseToken(boundTo: order)
            let consume = ["token": token.token, "audience": "https://shop.example.com"]
            let bearer = ["Authorization": "Bearer \(backendKey)"]
            let paid = try await shop.send("POST", "/v1/verify/consume", headers: bearer, json: consume)
            try expect(paid.status == 200 && paid.json["app"] as? String == "\(team).\(bundle)", "consume: \(paid.status) \(paid.json)")
            let replayed = try await shop.send("POST", "/v1/verify/consume", headers: bearer, json: consume)
            try expect(replayed.status == 409 && replayed.errorCode == "already_consumed", "replayed purchase: \(replayed.status) \(replayed.json)")

            let signed = try await client.assertion(for: order)
            let checked = try await shop.send("POST", "/v1/verify/assertion", headers: bearer, json: signed.verificationBody)
            try expect(checked.status == 200 && checked.json["tier"] as? String == "attested", "assertion: \(checked.status) \(checked.json)")
            let again = try await shop.send("POST", "/v1/verify/assertion", headers: bearer, json: signed.verificationBody)
            try expect(again.status == 401 && again.errorCode == "assertion_invalid", "replayed assertion: \(again.status) \(again.json)")
            // The management API is no door for a backend key.
            let manage = try await shop.send("GET", "/v1/admin/config", headers: bearer)
            try expect(manage.status == 401, "a backend key managed: \(manage.status)")
        }
        try await step(19, "a device banned through DeviceCheck is refused after a reinstall with a new key; the ban lifted, it is served again") {
            _ = try await suite.sesame(["apple", "set", "--key-id", apple.keyID, "--private-key-file", apple.keyFile], key: key)
            _ = try await suite.sesame(["policy", "set", "deviceBanBit=1"], key: key)
            let phone = install(onPhone: "walk-iphone")
            _ = try await launch(phone, version: "2.1.3").fetchConfig()
            guard let stored = try phone.store.data(for: "sesame.appAttestKeyID") else { throw WalkFailure("the install kept no key id") }
            let keyID = String(decoding: stored, as: UTF8.self)
            _ = try await suite.sesame(["devices", "revoke", "--key-id", keyID, "--reason", "e2e: a farmed device", "--ban"], key: key)
            try expect(apple.server.bits(of: "walk-iphone")?.bit1 == true, "Apple was not told: \(String(describing: apple.server.bits(of: "walk-iphone")))")
            // A reinstall: new App Attest keys, an empty Keychain, the same phone to Apple.
            do {
                let served = try await launch(install(onPhone: "walk-iphone"), version: "2.1.3").fetchConfig()
                throw WalkFailure("a banned device was served after a reinstall: \(served.source)")
            } catch let error as SesameError {
                try expect(error.code == "device_banned", "a banned device's attest: \(error)")
            }
            _ = try await launch(install(onPhone: "another-iphone"), version: "2.1.3").fetchConfig()
            _ = try await suite.sesame(["devices", "unban", "--key-id", keyID, "--reason", "e2e: appeal"], key: key)
            try expect(apple.server.bits(of: "walk-iphone")?.bit1 == false, "the ban was not lifted with Apple")
            _ = try await launch(install(onPhone: "walk-iphone"), version: "2.1.3").fetchConfig()
            _ = try await suite.sesame(["policy", "set", "deviceBanBit=null"], key: key)
        }
        try await step(20, "each new key's receipt is traded with Apple and its risk metric listed; a key above maxRiskMetric is revoked, its refresh refused (risk_too_high)") {
            _ = try await suite.sesame(["policy", "set", "maxRiskMetric=5"], key: key)
            let honest = Device(attester: apple.attester, team: team, bundle: bundle, gateway: HTTPClient(base: gateway))
            try await honest.attest(appVersion: "2.1.3")
            guard let honestKeyID = honest.key?.keyId else { throw WalkFailure("the honest device kept no key") }
            // As the devices list writes key ids: base64url without padding.
            let honestKey = Data(honestKeyID).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            try await eventually("the honest key's risk metric listed", timeout: .seconds(30), every: .milliseconds(300)) {
                let listed = try await suite.sesame(["devices", "list", "--json"], key: key)
                let page = try JSONSerialization.jsonObject(with: Data(listed.utf8)) as? [String: Any]
                let devices = page?["devices"] as? [[String: Any]] ?? []
                return devices.contains { $0["keyId"] as? String == honestKey && $0["riskMetric"] as? Int == 1 && $0["receipt"] as? String == "verified" }
            }
            apple.server.defaultRiskMetric.withLock { $0 = 40 }
            defer { apple.server.defaultRiskMetric.withLock { $0 = 1 } }
            let farmed = Device(attester: apple.attester, team: team, bundle: bundle, gateway: HTTPClient(base: gateway))
            try await farmed.attest(appVersion: "2.1.3")
            try await eventually("the farmed key revoked", timeout: .seconds(30), every: .milliseconds(300)) {
                let refused = try await farmed.refresh(try await farmed.assertedRefreshBody())
                return refused.status == 403 && refused.errorCode == "risk_too_high"
            }
            let honestRefresh = try await honest.refresh(try await honest.assertedRefreshBody())
            try expect(honestRefresh.status == 200, "the honest key's refresh: \(honestRefresh.status)")
            _ = try await suite.sesame(["policy", "set", "maxRiskMetric=null"], key: key)
        }
        try await step(21, "an attested install streams a completion through the gateway's relay from a fake LLM: the first words arrive before the answer ends, the provider's key is added on the server and in no log; a client without an attested install's token is refused") {
            try await relayedCompletion()
        }
        try await step(22, "SesameKit: the suite stopped; the saved config is served stale, the killed version's kill switch is remembered") {
            try await suite.suite.down()
            let config = try await launch(current, version: "2.1.3").fetchConfig()
            try expect(config.source == .cache && config.isStale && config.string("api_keys.stripe") == "sk-2", "offline: \(config)")
            do {
                let served = try await launch(updated, version: "2.1.4").fetchConfig()
                throw WalkFailure("a killed version was served offline: \(served)")
            } catch let error as SesameError {
                // Remembered from when Sesame said it, with the team's reason: no config is served.
                guard case .versionDisabled(let reason) = error, reason.contains("update to 2.1.5") else {
                    throw WalkFailure("offline, killed version: \(error)")
                }
            }
        }
    }
}
